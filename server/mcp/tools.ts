/**
 * The MCP tools: each one a REST operation of /api/v1 (its procedure, its errors, its idempotency,
 * its ledger events), named and described for a language model. Nothing here decides anything
 * about work, runs or decisions: server/mcp/call.ts runs the operation through the REST transport.
 *
 * A tool's input schema is the operation's procedure's own zod input, said as JSON Schema by zod
 * (`z.toJSONSchema`, the input side): the procedure's input already holds the path parameters
 * beside the query's or the body's members, one flat object as a tool takes it. The headers an
 * agent sets (Idempotency-Key, X-Correlation-Id, X-Context-Manifest-Digest), which the procedure
 * declares as its OpenAPI meta's requestHeaders, become `idempotency_key`, `correlation_id` and
 * `context_manifest_digest`. Schemas the input names (`.meta({ id })`) come along as `$defs`.
 */
import { z } from 'zod';
import { operations, type Operation } from '@/server/api/operations';

type Json = Record<string, unknown>;

/** Where a tool argument goes in the REST request. */
interface ArgPlace {
  in: 'path' | 'query' | 'header' | 'body';
  /** Its name there (a header's, lower-case). */
  name: string;
  /**
   * For a path parameter: the procedure's own schema of it (a UUID for every id), which its value
   * must meet before it becomes a path segment (server/mcp/call.ts): `.` or `..` would otherwise
   * name another operation once the URL is resolved.
   */
  schema?: z.ZodType;
}

interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  /** The REST operation it runs. */
  method: 'GET' | 'POST';
  path: string;
  /** Parameters and body members the tool does not offer (the event stream's SSE settings). */
  omit?: string[];
  /** Path parameters the tool sets itself (resume_run's action). */
  fixed?: Record<string, string>;
  /** Arguments of the tool's own, beside the operation's (request_decision's wait_seconds). */
  own?: Record<string, Json>;
  readOnly: boolean;
}

/** The request_decision tool's own argument: how long to wait for the ruling. */
export const WAIT_SECONDS_MAX = 600;

const TOOLS: ToolDefinition[] = [
  {
    name: 'create_work',
    title: 'Create work',
    description:
      'Create a task (a piece of work) with its receipt, recorded in the workspace’s ledger. Give a title and, optionally, ' +
      'a description, priority, an estimate and where it belongs in the plan (initiative, workstream, milestone; the Inbox when none). ' +
      'Pass idempotency_key to make a retry safe: the same key and arguments return the first answer and record nothing new.',
    method: 'POST',
    path: '/work',
    readOnly: false,
  },
  {
    name: 'create_initiative',
    title: 'Plan an initiative',
    description:
      'Create an initiative with its plan in one call: workstreams, their milestones, and tasks, each task optionally ' +
      'depending on siblings (depends_on, by ref). Give each node a ref to get its id back (data.refs); put later work ' +
      'in the plan with create_work and the three ids (initiative, workstream, milestone).',
    method: 'POST',
    path: '/initiatives',
    readOnly: false,
  },
  {
    name: 'list_tasks',
    title: 'List tasks',
    description:
      'List the workspace’s tasks, newest first, filtered by status, type, priority, initiative, workstream or milestone. ' +
      'With ready=true, only tasks that can be started now (todo, every dependency done), in the order an agent should take them. ' +
      'Page with the cursor from the previous answer (meta.nextCursor).',
    method: 'GET',
    path: '/tasks',
    readOnly: true,
  },
  {
    name: 'claim_task',
    title: 'Claim the next ready task',
    description:
      'Claim the next ready task as agent_id (your agent’s name; filters narrow it to an initiative, type or priority) and ' +
      'start a run of it, with a lease: ' +
      'no other agent gets the same task while the lease holds. Keep the lease with heartbeat or checkpoint before it ' +
      'expires (lease.expires_at), and end the run with finish_run. Answers the task, the run and its lease, or nothing ' +
      'when no task is ready.',
    method: 'POST',
    path: '/tasks/claim',
    readOnly: false,
  },
  {
    name: 'checkpoint',
    title: 'Record a checkpoint',
    description:
      'Record progress on a run (a label and, optionally, state to resume from): it is kept in the ledger and ' +
      'renews the run’s lease. Use the run id claim_task gave.',
    method: 'POST',
    path: '/runs/{runId}/checkpoints',
    readOnly: false,
  },
  {
    name: 'heartbeat',
    title: 'Renew a run’s lease',
    description:
      'Tell the service the run is still alive, renewing its lease (and the fencing token stays the same). Call it well ' +
      'before lease.expires_at while working without checkpoints; a run whose lease lapsed can no longer write.',
    method: 'POST',
    path: '/runs/{runId}/heartbeat',
    readOnly: false,
  },
  {
    name: 'finish_run',
    title: 'Finish a run',
    description:
      'End a run with its outcome (completed: the task is done; or failed), a summary and the ids of the artifacts it delivered ' +
      '(from register_artifact). Its receipt records what happened.',
    method: 'POST',
    path: '/runs/{runId}/finish',
    readOnly: false,
  },
  {
    name: 'resume_run',
    title: 'Resume a paused run',
    description:
      'Resume a run that paused, as a run raised a blocking decision on pauses (blocks_task true): once the decision is ' +
      'approved, resume it to get a new lease, then go on and finish it. A run already running answers as it is.',
    method: 'POST',
    path: '/runs/{runId}/actions/{action}',
    fixed: { action: 'resume' },
    omit: ['checkpointId'],
    readOnly: false,
  },
  {
    name: 'request_decision',
    title: 'Ask a human for a ruling',
    description:
      'Raise a decision for a human to approve or decline: a title, the question, the options or the exact action ' +
      '(tool and arguments) to approve, an urgency, and optionally the task and run it concerns. With blocks_task true and ' +
      'a run_id, the run pauses while the human decides (it holds no lease to keep): resume it with resume_run once ' +
      'approved. With wait_seconds (up to 600) the ' +
      'tool waits for the ruling and answers the decision as it then stands: status (pending, approved, declined, ' +
      'cancelled, expired), the chosen option, the arguments as the human edited them, and the grant to present with ' +
      'consume_grant before running an approved action. While it waits it reports progress; a client that can open a URL ' +
      'is offered the decision page. A decision still pending when the wait ends is not lost: wait again with ' +
      'get_decision or another request_decision with the same idempotency_key.',
    method: 'POST',
    path: '/decisions',
    own: {
      wait_seconds: {
        type: 'integer',
        minimum: 0,
        maximum: WAIT_SECONDS_MAX,
        default: 0,
        description: `Seconds to wait for the ruling before answering (0 to ${WAIT_SECONDS_MAX}; 0 answers at once).`,
      },
    },
    readOnly: false,
  },
  {
    name: 'get_decision',
    title: 'Read a decision',
    description:
      'Read a decision as it stands now: its status, the ruling, the chosen option, edited arguments and, once approved, ' +
      'the grant. Also readable as the resource decision://{id}.',
    method: 'GET',
    path: '/decisions/{id}',
    readOnly: true,
  },
  {
    name: 'consume_grant',
    title: 'Use a grant, once',
    description:
      'Before running an action a human approved, present the decision’s grant token with the digest of the action you ' +
      'are about to run (sha256: + hex SHA-256 of the RFC 8785 JSON of {tool, arguments, target?}). The service checks ' +
      'the grant was issued for exactly that action and marks it used; a second use, another action or an expired grant ' +
      'is refused, and then the action must not run.',
    method: 'POST',
    path: '/grants/consume',
    readOnly: false,
  },
  {
    name: 'register_artifact',
    title: 'Register an artifact',
    description:
      'Record something a run delivered: its type from the artifact catalog, a name, and either its content (standard ' +
      'base64, up to 1 MiB) or a URI with its SHA-256 and size. The ledger records its digest; pass the returned id to ' +
      'finish_run in artifact_ids.',
    method: 'POST',
    path: '/artifacts',
    readOnly: false,
  },
  {
    name: 'verify_ledger',
    title: 'Verify the ledger',
    description:
      'Check the workspace’s hash-chained ledger from its first event to its head: every event’s digest and link. ' +
      'Answers whether it is intact, the head, and the first break if there is one.',
    method: 'GET',
    path: '/ledger/verify',
    readOnly: true,
  },
  {
    name: 'read_events',
    title: 'Read ledger events',
    description:
      'Read the workspace’s ledger events in order, oldest first, optionally only some types (e.g. decision.approved). ' +
      'Pass the cursor from the previous answer (meta.nextCursor) to go on from there.',
    method: 'GET',
    path: '/events/stream',
    omit: ['format', 'last_event_id', 'lease_ms', 'poll_ms'],
    readOnly: true,
  },
];

/** A header parameter as a tool argument: X-Correlation-Id → correlation_id. */
const argOfHeader = (header: string) => header.toLowerCase().replace(/^x-/, '').replaceAll('-', '_');

export interface Tool extends ToolDefinition {
  inputSchema: Json & { type: 'object' };
  places: Map<string, ArgPlace>;
  /** The operation's own body limit, when it has one (register_artifact's content). */
  bodyLimitBytes: number | undefined;
}

type JsonSchema = Json & { properties?: Record<string, Json>; required?: string[]; $defs?: Json };

/**
 * `schema` as JSON Schema, as a caller writes it (defaults optional, coercions' input). A schema
 * zod cannot say (a custom check: a JSON object kept as data) says itself in its meta's `override`,
 * which the OpenAPI document honours too (zod-openapi's convention).
 */
function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
    override({ jsonSchema }) {
      const said = (jsonSchema as Json).override;
      if (said === null || typeof said !== 'object') return;
      delete (jsonSchema as Json).override;
      Object.assign(jsonSchema, said);
    },
  });
  return json as JsonSchema;
}

/** The operation `def` runs, and its procedure (every tool's operation has one). */
function operationOf(
  def: Pick<ToolDefinition, 'name' | 'method' | 'path'>,
): Operation & { procedure: NonNullable<Operation['procedure']> } {
  const operation = operations.find((o) => o.method === def.method && o.path === def.path);
  if (!operation?.procedure) throw new Error(`MCP tool ${def.name}: no procedure defines ${def.method} ${def.path}`);
  return operation as Operation & { procedure: NonNullable<Operation['procedure']> };
}

function toolOf(def: ToolDefinition): Tool {
  const operation = operationOf(def);
  const defs: Json = {};
  const properties: Json = {};
  const required: string[] = [];
  const places = new Map<string, ArgPlace>();
  const add = (arg: string, place: ArgPlace, schema: unknown, isRequired: boolean) => {
    if (places.has(arg)) throw new Error(`MCP tool ${def.name}: two arguments named ${arg}`);
    places.set(arg, place);
    properties[arg] = schema;
    if (isRequired) required.push(arg);
  };
  const headers = operation.meta.openapi?.requestHeaders as z.ZodType | undefined;
  if (headers) {
    for (const [name, schema] of Object.entries(jsonSchemaOf(headers).properties ?? {})) {
      if (def.omit?.includes(name)) continue;
      add(argOfHeader(name), { in: 'header', name: name.toLowerCase() }, schema, false);
    }
  }
  const input = operation.procedure.input;
  if (input) {
    const json = jsonSchemaOf(input);
    if (json.type !== 'object' || !json.properties) throw new Error(`MCP tool ${def.name}: its input is not a plain object`);
    const inputRequired = new Set(json.required ?? []);
    const rest = def.method === 'GET' ? 'query' : 'body';
    const shape = input instanceof z.ZodObject ? (input.shape as Record<string, z.ZodType>) : {};
    for (const [name, schema] of Object.entries(json.properties)) {
      if (def.omit?.includes(name) || def.fixed?.[name] !== undefined) continue;
      if (!operation.params.includes(name)) {
        add(name, { in: rest, name }, schema, inputRequired.has(name));
        continue;
      }
      if (!shape[name]) throw new Error(`MCP tool ${def.name}: no schema of its path parameter ${name}`);
      add(name, { in: 'path', name, schema: shape[name] }, schema, inputRequired.has(name));
    }
    Object.assign(defs, json.$defs);
  }
  // The key belongs to one workspace: an agent need not know its id (REST asks for it where the
  // specification does; here it is filled in when left out, and refused when it names another).
  if (places.has('workspace_id')) {
    const i = required.indexOf('workspace_id');
    if (i >= 0) required.splice(i, 1);
    const schema = properties.workspace_id as Json;
    properties.workspace_id = {
      ...schema,
      description: `${schema.description ? `${String(schema.description)} ` : ''}Default: the API key’s workspace.`,
    };
  }
  for (const [name, schema] of Object.entries(def.own ?? {})) {
    if (places.has(name)) throw new Error(`MCP tool ${def.name}: its own argument ${name} is also the operation's`);
    properties[name] = schema;
  }
  const inputSchema: Tool['inputSchema'] = { type: 'object', properties, additionalProperties: false };
  if (required.length > 0) inputSchema.required = required;
  if (Object.keys(defs).length > 0) inputSchema.$defs = defs;
  return { ...def, inputSchema, places, bodyLimitBytes: operation.meta.bodyLimitBytes };
}

let built: Map<string, Tool> | null = null;

/** Every tool, by name (built once, from the procedures). */
export function tools(): Map<string, Tool> {
  built ??= new Map(TOOLS.map((t) => [t.name, toolOf(t)]));
  return built;
}

let readers: { checkpoint: Tool; decision: Tool } | null = null;

/** The operations behind the resources: ledger://checkpoint and decision://{id}. */
export function resourceReaders(): { checkpoint: Tool; decision: Tool } {
  readers ??= {
    checkpoint: toolOf({
      name: 'checkpoint',
      title: 'Checkpoint',
      description: '',
      method: 'GET',
      path: '/ledger/checkpoint',
      readOnly: true,
    }),
    decision: tools().get('get_decision')!,
  };
  return readers;
}
