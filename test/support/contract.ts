/**
 * Holds every response the integration suite sees to the served OpenAPI document: the status
 * must be documented for the operation, and the body must match the documented schema.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { openApiDocument } from '@/server/api/openapi';

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }>; 'x-sse'?: { mediaType: string } }>
  >;
};

let ajv: InstanceType<typeof Ajv2020> | undefined;
let doc: Doc | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): { ajv: InstanceType<typeof Ajv2020>; doc: Doc } {
  if (!ajv || !doc) {
    doc = JSON.parse(JSON.stringify(openApiDocument('http://localhost:3000'))) as Doc;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ ...doc, $id: 'openapi' });
  }
  return { ajv, doc };
}

/** The documented path for `path`: of those it matches, the one with an operation for `method` (POST /tasks/claim, not /tasks/{id}). */
function templateFor(doc: Doc, method: string, path: string): string | undefined {
  const matching = Object.keys(doc.paths).filter((template) => {
    const re = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    return re.test(path);
  });
  return matching.find((template) => doc.paths[template]?.[method.toLowerCase()]) ?? matching[0];
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Returns a list of problems (empty when the response matches the document). */
export function checkAgainstDocument(
  method: string,
  apiPath: string,
  status: number,
  body: unknown,
  contentType?: string | null,
): string[] {
  const { ajv: validator, doc: document } = load();
  // HEAD is documented as its GET: same statuses, no body.
  const head = method.toUpperCase() === 'HEAD';
  if (head) method = 'GET';
  const template = templateFor(document, method, apiPath);
  if (!template) return status === 404 ? [] : [`${method} ${apiPath}: no such path in the document`];
  const operation = document.paths[template]?.[method.toLowerCase()];
  if (!operation) return status === 404 ? [] : [`${method} ${template}: no such operation in the document`];
  const response = operation.responses[String(status)];
  if (!response) return [`${method} ${template}: status ${status} is not documented`];
  // An event-stream lease is documented beside its operation's JSON 200 (x-sse, server/api/openapi.ts).
  if (contentType?.startsWith('text/event-stream')) {
    const documented = status === 200 && operation['x-sse']?.mediaType === 'text/event-stream';
    return documented ? [] : [`${method} ${template} ${status}: text/event-stream is not documented`];
  }
  const schema = response.content?.['application/json']?.schema;
  if (!schema || head) return [];
  const ref = `openapi#/paths/${escape(template)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  let validate = validators.get(ref);
  if (!validate) {
    validate = validator.getSchema(ref) ?? validator.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${method} ${template} ${status}: ${e.instancePath} ${e.message}`);
}
