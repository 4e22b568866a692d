/**
 * What the procedures of mcpServersRouter share: a server as the API shows it, the fields of its
 * registration and change, and the builder of those that act on one server. Owners manage the
 * servers, and API keys, which act for an owner, as for webhooks.
 */
import { z } from 'zod';
import { decisionUrgencies, guardModes, mcpServers } from '@/db/schema';
import { MAX_SERVERS_PER_WORKSPACE } from '@/server/domain/mcp-servers/servers';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { OWNERS } from '../../trpc';
import { apiMeta, id, jsonBoolean, jsonNumber, timestamp } from '../../schemas';
import { policyInput, policySchema } from '../decisions/policy-schemas';

const MAX_HEADERS = 20;
const MAX_HEADER_VALUE = 4096;
const MAX_GUARDS = 100;
/** An HTTP field name (RFC 9110 §5.1: a token). */
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
/** Visible ASCII, spaces and tabs inside: what every HTTP stack sends as it is. */
const HEADER_VALUE = /^([\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?)?$/;
/**
 * Headers the transport to the upstream sets itself (or that would change how the request is
 * framed or routed): a caller's value would break the protocol or aim it elsewhere.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

const nameField = z
  .string()
  .regex(/^[a-z0-9-]{1,32}$/, 'must be 1 to 32 lower-case letters, digits and hyphens')
  .meta({
    description:
      'A slug, unique in the workspace: its tools appear at /mcp as `<name>__<tool>` (so no `_` in it), and decisions about ' +
      'them name the tool `<name>.<tool>`.',
  });

const urlField = z
  .string()
  .min(1)
  .max(2000)
  .meta({
    description:
      'The server’s Streamable HTTP endpoint: http:// or https://, without user name, password or fragment. Hosts resolving to ' +
      'loopback, private, link-local or metadata addresses are refused (400), unless the operator allows the host ' +
      '(MCP_UPSTREAM_ALLOW_HOSTS).',
  });

const headersField = z
  .record(z.string(), z.string())
  .check((ctx) => {
    const entries = Object.entries(ctx.value);
    const issue = (path: (string | number)[], message: string) => ctx.issues.push({ code: 'custom', input: ctx.value, path, message });
    if (entries.length > MAX_HEADERS) issue([], `at most ${MAX_HEADERS} headers`);
    const seen = new Set<string>();
    for (const [name, value] of entries) {
      const lower = name.toLowerCase();
      if (!HTTP_TOKEN.test(name)) issue([name], "a header name is an HTTP token: letters, digits and !#$%&'*+.^_`|~-");
      else if (RESERVED_HEADERS.has(lower)) issue([name], `${lower} is set by the transport itself`);
      else if (seen.has(lower)) issue([name], 'named twice (header names ignore case)');
      seen.add(lower);
      // The value is never repeated in a message: it is a credential.
      if (value.length > MAX_HEADER_VALUE) issue([name], `a value is at most ${MAX_HEADER_VALUE} characters`);
      else if (!HEADER_VALUE.test(value)) {
        issue([name], 'a value is visible ASCII characters, with spaces or tabs inside but not at either end, and no line break');
      }
    }
  })
  .transform((headers) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])))
  .meta({
    description:
      `Sent with every request to the server (an upstream bearer token, say): at most ${MAX_HEADERS}, values at most ` +
      `${MAX_HEADER_VALUE} characters. Stored encrypted and never shown again, nor recorded in any event: answers name them ` +
      '(`header_names`, lower-cased) and nothing more. Headers the transport sets (host, content-type, accept, ' +
      'mcp-session-id, …) are refused.',
  });

/** What only an ask guard means: refused on allow and deny, where it would be silently ignored. */
const ASK_ONLY = ['urgency', 'require_passkey', 'policy', 'editable'] as const;

const guardInput = z
  .strictObject({
    tool: z
      .string()
      .regex(/^[A-Za-z0-9_.*?/-]{1,128}$/, 'must be 1 to 128 of A-Z a-z 0-9 _ . / - and the wildcards * and ?')
      .meta({
        description: 'A glob over the upstream tool’s name: `*` any run of characters, `?` one, anything else itself; whole names only.',
      }),
    mode: z.enum(guardModes).meta({
      description: '`allow`: forwarded at once. `deny`: refused without reaching the server. `ask`: forwarded only once a human approves.',
    }),
    urgency: z.enum(decisionUrgencies).optional().meta({ description: 'ask: the decision’s urgency (default standard).' }),
    require_passkey: jsonBoolean().optional().meta({ description: 'ask: approving takes the approver’s passkey.' }),
    policy: policyInput.optional().meta({
      description: 'ask: who must approve, as POST /decisions takes it; without one, the workspace’s rules (GET /decision-policy) choose.',
    }),
    editable: jsonBoolean()
      .optional()
      .meta({ description: 'ask: whether the approver may change the arguments before approving (default true).' }),
  })
  .check((ctx) => {
    if (ctx.value.mode === 'ask') return;
    for (const field of ASK_ONLY) {
      if (ctx.value[field] !== undefined) {
        ctx.issues.push({
          code: 'custom',
          input: ctx.value,
          path: [field],
          message: `applies to an ask guard only (this one is ${ctx.value.mode})`,
        });
      }
    }
  })
  .meta({ id: 'McpGuardInput' });

const guardsField = z
  .array(guardInput)
  .max(MAX_GUARDS)
  .meta({
    description: `Up to ${MAX_GUARDS}, in order: the first whose glob matches a tool’s name says what a call of it does.`,
  });
const defaultModeField = z
  .enum(guardModes)
  .meta({ description: 'What a call of a tool no guard matches does. Default `ask`: a new tool is never let through unseen.' });
const timeoutField = jsonNumber({ min: 1000, max: 300_000, int: true }).meta({
  description: 'How long a call (and a listing) may take at the server before it counts as failed, in ms (1000–300000, default 60000).',
});

/** The fields of a registration and of a change (defaults and optionality are each operation's). */
export const serverFields = {
  name: nameField,
  url: urlField,
  headers: headersField,
  guards: guardsField,
  default_mode: defaultModeField,
  timeout_ms: timeoutField,
};

const guardSchema = z
  .object({
    tool: z.string(),
    mode: z.enum(guardModes),
    urgency: z.enum(decisionUrgencies).optional(),
    require_passkey: z.boolean().optional(),
    policy: policySchema.optional().meta({ description: 'In full, as a decision raised under it would get it.' }),
    editable: z.boolean().optional(),
  })
  .meta({ id: 'McpGuard' });

const toolSchema = z
  .object({
    name: z.string().meta({ description: 'As the server names it; agents call it as `<server>__<name>`.' }),
    title: z.string().optional(),
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown()).meta({ description: 'The JSON Schema of its arguments, as the server listed it.' }),
    schema_digest: z
      .string()
      .meta({ description: '`sha256:` + hex SHA-256 of the input schema’s RFC 8785 JSON: what the ledger records of it.' }),
    mode: z.enum(guardModes).meta({ description: 'What a call of it does now, under the guards.' }),
    guard_index: z
      .int()
      .nullable()
      .meta({ description: 'The guard that decides it (its index); null: none matches, `default_mode` does.' }),
  })
  .meta({ id: 'McpUpstreamTool' });

export const serverSchema = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    name: z.string(),
    url: z.string(),
    header_names: z.array(z.string()).meta({ description: 'The names of the headers sent to it; their values are never shown.' }),
    guards: z.array(guardSchema),
    default_mode: z.enum(guardModes),
    timeout_ms: z.int(),
    tools: z.array(toolSchema).meta({ description: 'As the server listed them last.' }),
    tools_listed_at: timestamp().nullable(),
    last_error: z
      .string()
      .nullable()
      .meta({ description: 'Why the last listing the server asked for itself (tools/list_changed) failed; null once one works.' }),
    aggregateVersion: z.int().meta({ description: 'The server’s version in the ledger (+1 per event of it), also sent as the ETag.' }),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'McpServer' });

/** An answer of this family: `{data, meta}`. */
export function serverAnswer<S extends z.ZodType>(data: S, schemaId: string) {
  return z.object({ data, meta: apiMeta }).meta({ id: schemaId });
}

/** The body of an answer about `workspaceId`. */
export function answered<T>(workspaceId: string, data: T) {
  return { data, meta: { apiVersion: '1' as const, workspaceId } };
}

export const serverResponse = serverAnswer(serverSchema, 'McpServerResponse');
export const serverPath = z.strictObject({ id: id() });

export const common = { tags: ['mcp-servers'] };
export const auth: ('ApiKey' | 'Session')[] = ['ApiKey', 'Session'];
export const limits = `A workspace fronts at most ${MAX_SERVERS_PER_WORKSPACE} servers.`;

const noSuchServer = () => new AppError('not_found', 'No such MCP server in your workspace.');

/** Acting on the server the input names (`id`), as an owner of its workspace; 404 for anyone outside it. */
export const serverProcedure = resourceProcedure(mcpServers, 'id', noSuchServer, OWNERS);
