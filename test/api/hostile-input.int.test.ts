/**
 * Hostile input, against the whole API at once.
 *
 * 1. Property tests driven by the served OpenAPI document: for every operation (path × method),
 *    requests drawn from its own request-body and parameter schemas (test/support/schema-arbitrary.ts),
 *    valid ones and ones broken in one place. Whatever is sent, the answer is a documented status
 *    with a body matching the documented schema (app.request checks both), never a 5xx, and a 4xx
 *    writes nothing.
 * 2. JSON bombs and hostile transport, one named test each: deep nesting, huge arrays, duplicate
 *    keys, __proto__ / constructor / prototype keys, oversized and non-UTF-8 headers over real
 *    HTTP, bad UTF-8 in bodies and query strings, and forged cursors on every paginated operation.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { openApiDocument } from '@/server/api/openapi';
import { errorTable, isErrorCode } from '@/server/errors';
import { canonicalJson, digestOf } from '@/server/ledger/canonical';
import { systemTrace } from '@/server/domain/actor';
import { recordRefused } from '@/server/domain/tool-calls/calls';
import { sampleReceipt } from '@/server/domain/receipts/sample';
import { WebhookDispatcher } from '@/server/webhooks/dispatcher';
import { startReceiver } from '../support/receiver';
import { startTestApp, type ApiResponse, type RequestOptions, type TestApp, type TestMember, type TestWorkspace } from '../support/app';
import { launchTree } from '../support/fixtures';
import { startUpstream } from '../support/upstream-mcp';
import {
  brokenValue,
  jsonText,
  keywordsIn,
  SUPPORTED_KEYWORDS,
  validValue,
  type JsonSchema,
  type SchemaContext,
} from '../support/schema-arbitrary';

// ---- the document ---------------------------------------------------------------------------

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: JsonSchema;
}
interface Operation {
  parameters?: Parameter[];
  security?: Record<string, unknown>[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}

const APP_URL = 'http://localhost:3000';
// Read when the file is collected, to name one test per operation; the test below holds it equal
// to what GET /openapi.json serves.
const doc = JSON.parse(JSON.stringify(openApiDocument(APP_URL))) as Doc;
const resolve = (ref: string): JsonSchema => {
  const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
  const schema = name ? doc.components.schemas[name] : undefined;
  if (!schema) throw new Error(`unresolvable $ref ${ref}`);
  return schema;
};

const operations = Object.entries(doc.paths).flatMap(([template, item]) =>
  Object.entries(item).map(([method, op]) => ({ template, method: method.toUpperCase() as 'GET' | 'POST' | 'PATCH', op })),
);
const bodySchemaOf = (op: Operation) => op.requestBody?.content['application/json'].schema;
const paramsOf = (op: Operation, where: Parameter['in']) => (op.parameters ?? []).filter((p) => p.in === where);
const isPublic = (op: Operation) => (op.security ?? []).length === 0;
const sessionOnly = (op: Operation) => (op.security ?? []).length > 0 && op.security!.every((s) => 'Session' in s && !('ApiKey' in s));

// ---- the app and real records ---------------------------------------------------------------

let app: TestApp;
let other: TestWorkspace;
let approver: TestMember;
let owner: TestMember;

/** Ids of real records, for path parameters and body fields that name one. */
const real = {
  tasks: [] as string[],
  receipts: [] as string[],
  runs: [] as string[],
  checkpoints: [] as string[],
  decisions: [] as string[],
  initiatives: [] as string[],
  workstreams: [] as string[],
  milestones: [] as string[],
  /** Records of another workspace: the key must not reach them. */
  foreign: [] as string[],
  eventCursor: '',
  decisionCursor: '',
  foreignEventCursor: '',
  foreignDecisionCursor: '',
  /** Cursors of the other paged lists (GET /tasks, /runs, /receipts, /initiatives, …), ours and the other workspace's. */
  listCursors: {} as Record<string, { mine: string; theirs: string }>,
  /** A webhook endpoint of this workspace, then one of the other. */
  webhooks: [] as string[],
};

/** The lists paged by a keyset cursor other than the ledger and decisions. */
const LISTS = ['tasks', 'runs', 'receipts', 'initiatives', 'webhooks', 'artifacts', 'mcp-servers', 'tool-calls'] as const;

async function ok<T = any>(res: Promise<ApiResponse<T>>, status: number): Promise<ApiResponse<T>> {
  const r = await res;
  expect(r.status, r.text.slice(0, 300)).toBe(status);
  return r;
}

/** A task, an initiative with its tree, a run with a checkpoint, decisions and receipts, in the key's workspace. */
async function seed(key: string, workspaceId: string, into: (id: string) => void): Promise<void> {
  const work = await ok(app.request('POST', '/work', { key, body: { title: 'hostile seed' } }), 201);
  into(work.body.data.taskId);
  into(work.body.data.receiptId);
  const tree = await ok(app.request('POST', '/initiatives', { key, body: launchTree }), 201);
  into(tree.body.data.initiative.id);
  for (const id of Object.values(tree.body.data.refs as Record<string, string>)) into(id);
  const run = await ok(app.request('POST', '/runs', { key, body: { task_id: work.body.data.taskId } }), 201);
  into(run.body.data.runId);
  const cp = await ok(app.request('POST', `/runs/${run.body.data.runId}/checkpoints`, { key, body: { label: 'seed' } }), 201);
  into(cp.body.data.checkpointId);
  const decision = await ok(app.request('POST', '/decisions', { key, body: { workspace_id: workspaceId, title: 'seed' } }), 201);
  into(decision.body.decision.id);
  await seedArtifacts(key, into);
}

/** Two artifacts, so that the list of artifacts has a second page. */
async function seedArtifacts(key: string, into: (id: string) => void = () => undefined) {
  for (const text of ['one', 'two']) {
    const body = { artifact_type: 'test_report', title: text, media_type: 'text/plain', content: Buffer.from(text).toString('base64') };
    into((await ok(app.request('POST', '/artifacts', { key, body }), 201)).body.data.id);
  }
}

beforeAll(async () => {
  // Thousands of requests from one key, one address and one session: the limits are tested elsewhere.
  // Private webhook URLs allowed: the seed below delivers to a receiver on 127.0.0.1.
  app = await startTestApp({
    RATE_LIMIT_API_PER_MIN: '10000000',
    RATE_LIMIT_VALIDATOR_PER_MIN: '10000000',
    RATE_LIMIT_SESSION_WRITES_PER_MIN: '10000000',
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    // And MCP servers on it: the seed registers an upstream on 127.0.0.1.
    MCP_UPSTREAM_ALLOW_HOSTS: '127.0.0.1',
  });
  approver = await app.member('approver');
  owner = await app.member('owner');
  other = await app.createWorkspace();
  await seed(other.apiKey, other.workspaceId, (id) => real.foreign.push(id));
  await ok(app.request('POST', '/decisions', { key: other.apiKey, body: { workspace_id: other.workspaceId, title: 'second' } }), 201);

  for (let i = 0; i < 3; i++) {
    const work = await ok(app.request('POST', '/work', { body: { title: `task ${i}` } }), 201);
    real.tasks.push(work.body.data.taskId);
    real.receipts.push(work.body.data.receiptId);
  }
  const tree = await ok(app.request('POST', '/initiatives', { body: launchTree }), 201);
  const refs = tree.body.data.refs as Record<string, string>;
  real.initiatives.push(tree.body.data.initiative.id);
  real.workstreams.push(refs.research!, refs.build!);
  real.milestones.push(refs['m-interviews']!, refs['m-beta']!, refs['m-ga']!);
  real.tasks.push(refs.recruit!, refs.interview!, refs.api!);
  for (const taskId of real.tasks.slice(0, 2)) {
    const run = await ok(app.request('POST', '/runs', { body: { task_id: taskId, agent_id: 'fuzzer' } }), 201);
    real.runs.push(run.body.data.runId);
    const cp = await ok(
      app.request('POST', `/runs/${run.body.data.runId}/checkpoints`, { body: { label: 'one', state: { step: 1 } } }),
      201,
    );
    real.checkpoints.push(cp.body.data.checkpointId);
  }
  // Enough pending decisions for the sessions' rulings to keep finding some.
  for (let i = 0; i < 12; i++) {
    const d = await ok(app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: `decide ${i}` } }), 201);
    real.decisions.push(d.body.decision.id);
  }
  await seedArtifacts(app.ws.apiKey);
  const imported = await ok(app.request('POST', '/agent-work-receipts/import', { body: sampleReceipt() }), 201);
  real.receipts.push(imported.body.data.receipt_id);

  real.eventCursor = (await ok(app.request('GET', '/events/stream?limit=2'), 200)).body.meta.nextCursor;
  real.decisionCursor = (await ok(app.request('GET', '/decisions?limit=2'), 200)).body.meta.nextCursor;
  real.foreignEventCursor = (await ok(app.request('GET', '/events/stream?limit=2', { key: other.apiKey }), 200)).body.meta.nextCursor;
  real.foreignDecisionCursor = (await ok(app.request('GET', '/decisions?limit=1', { key: other.apiKey }), 200)).body.meta.nextCursor;
  expect(real.decisionCursor && real.foreignDecisionCursor).toBeTruthy();
  // The other workspace gets a second run and receipt, so that each of its lists has a second page.
  const second = await ok(app.request('POST', '/work', { key: other.apiKey, body: { title: 'second' } }), 201);
  await ok(app.request('POST', '/runs', { key: other.apiKey, body: { task_id: second.body.data.taskId } }), 201);
  // Two deliveries to an endpoint of each workspace, so that each deliveries list has a second page.
  const receiver = await startReceiver();
  const dispatcher = new WebhookDispatcher(app.runtime, { pollMs: 20 });
  try {
    for (const key of [app.ws.apiKey, other.apiKey]) {
      const hook = await ok(app.request('POST', '/webhooks', { key, body: { url: receiver.url, event_types: ['none.yet'] } }), 201);
      real.webhooks.push(hook.body.data.id);
      // A second endpoint, so that the list of endpoints has a second page too.
      await ok(app.request('POST', '/webhooks', { key, body: { url: receiver.url, event_types: ['none.yet'] } }), 201);
      for (let i = 0; i < 2; i++) await ok(app.request('POST', `/webhooks/${hook.body.data.id}/test`, { key }), 202);
    }
    dispatcher.start();
    await receiver.waitFor(4);
    // The receiver has them; their attempts are recorded as the answers come back.
    for (const [i, key] of [app.ws.apiKey, other.apiKey].entries()) {
      const path = `/webhooks/${real.webhooks[i]}/deliveries?limit=1`;
      for (let tries = 0; !(await app.request('GET', path, { key })).body.meta.nextCursor; tries++) {
        if (tries > 100) throw new Error('the deliveries were not recorded');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  } finally {
    await dispatcher.stop();
    await receiver.close();
  }
  // Two MCP servers in each workspace, so that each list of servers has a second page.
  const upstream = await startUpstream({ echo: {} });
  try {
    for (const key of [app.ws.apiKey, other.apiKey]) {
      for (const name of ['one', 'two']) await ok(app.request('POST', '/mcp-servers', { key, body: { name, url: upstream.url } }), 201);
    }
  } finally {
    await upstream.close();
  }
  real.listCursors.webhookDeliveries = {
    mine: (await ok(app.request('GET', `/webhooks/${real.webhooks[0]}/deliveries?limit=1`), 200)).body.meta.nextCursor,
    theirs: (await ok(app.request('GET', `/webhooks/${real.webhooks[1]}/deliveries?limit=1`, { key: other.apiKey }), 200)).body.meta
      .nextCursor,
  };
  // Two gateway calls in each workspace (refused by a guard: no upstream needed), so that each list of calls has a second page.
  for (const ws of [app.ws, other]) {
    const actor = {
      type: 'api_key' as const,
      id: ws.apiKeyId,
      ownerId: ws.ownerUserId,
      workspaceId: ws.workspaceId,
      trace: systemTrace(randomUUID()),
    };
    for (let i = 0; i < 2; i++) {
      await app.runtime.db.transaction((tx) =>
        recordRefused(tx, actor, {
          server_id: randomUUID(),
          server: 'bank',
          tool: 'wipe',
          mode: 'deny',
          arguments_digest: digestOf({ i }),
          run_id: null,
          decision_id: null,
          reason: 'denied',
        }),
      );
    }
  }
  for (const list of LISTS) {
    const mine = (await ok(app.request('GET', `/${list}?limit=1`), 200)).body.meta.nextCursor;
    const theirs = (await ok(app.request('GET', `/${list}?limit=1`, { key: other.apiKey }), 200)).body.meta.nextCursor;
    expect(mine && theirs, list).toBeTruthy();
    real.listCursors[list] = { mine, theirs };
  }
});
afterAll(async () => {
  await app?.close();
});

// ---- drawing requests -----------------------------------------------------------------------

/**
 * Mostly real ids of this workspace, sometimes unknown ones and another workspace's. (Arbitraries
 * are built inside the tests, after beforeAll has made the records.)
 */
const idFrom = (pool: string[]) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...pool) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.constantFrom(...real.foreign) },
  );

/** Body fields and query parameters that name records: drawn from real ones. */
function override(name: string): fc.Arbitrary<unknown> | undefined {
  switch (name) {
    case 'workspace_id':
      return fc.oneof(
        { weight: 8, arbitrary: fc.constant(app.ws.workspaceId) },
        { weight: 1, arbitrary: fc.constant(other.workspaceId) },
        { weight: 1, arbitrary: fc.uuid() },
      );
    case 'task_id':
      return idFrom(real.tasks);
    case 'run_id':
      return idFrom(real.runs);
    case 'initiative_id':
      return idFrom(real.initiatives);
    case 'workstream_id':
      return idFrom(real.workstreams);
    case 'milestone_id':
      return idFrom(real.milestones);
    case 'checkpointId':
      return idFrom(real.checkpoints);
    // The lifecycle's node (any level; also a decision option's id, where any text will do).
    case 'id':
      return idFrom([...real.initiatives, ...real.workstreams, ...real.milestones, ...real.tasks, ...real.runs]);
    // Mostly previews, so that lifecycle actions do not cancel every record the other operations use.
    case 'dry_run':
      return fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, fc.constant(false));
    default:
      return undefined;
  }
}
const ctx: SchemaContext = { resolve, override: (name) => override(name) };

const PATH_POOLS: Record<string, () => string[]> = {
  id: () => real.decisions,
  runId: () => real.runs,
  initiativeId: () => real.initiatives,
  receiptId: () => real.receipts,
  workspace_id: () => [app.ws.workspaceId],
};

/** Path segments the routes must refuse (raw: already percent-encoded where it matters). */
const GARBAGE_SEGMENTS = [
  'not-a-uuid',
  '%FF',
  '%C3%28',
  '%00',
  'x'.repeat(300),
  '..',
  '%2E%2E',
  '12345678-1234-1234-1234-1234567890123',
  "'%20OR%201=1",
];

function pathParam(p: Parameter): fc.Arbitrary<string> {
  const enumValues = p.schema.enum as string[] | undefined;
  if (enumValues) return fc.constantFrom(...enumValues);
  const pool = PATH_POOLS[p.name];
  if (!pool) throw new Error(`no pool of real ids for the path parameter ${p.name}`);
  return idFrom(pool());
}

type Query = [string, string][];

/** A query value drawn from its schema, as the client would send it (repeated for arrays). */
function queryValues(name: string, schema: JsonSchema, template: string): fc.Arbitrary<string[]> {
  if (name === 'cursor' || name === 'last_event_id') {
    // A real cursor of this list half the time (the rest: any text the schema allows).
    const mine = template === '/decisions' ? real.decisionCursor : real.eventCursor;
    return fc.oneof(
      fc.constant<string[]>([mine]),
      validValue(schema, ctx).map((v) => [String(v)]),
    );
  }
  const named = override(name);
  if (named) return named.map((v) => [String(v)]);
  if (schema.type === 'array') return validValue(schema, ctx).map((v) => (v as unknown[]).map(String));
  return validValue(schema, ctx).map((v) => [String(v)]);
}

/** One-place breaks of a query parameter; `documented` when the schema itself refuses the value. */
function queryBreaks(p: Parameter): { values: string[]; how: string; documented: boolean }[] {
  const s = p.schema;
  const out: { values: string[]; how: string; documented: boolean }[] = [];
  const add = (values: string[], how: string, documented = true) => out.push({ values, how: `query ${p.name}: ${how}`, documented });
  const item = (s.type === 'array' ? (s.items as JsonSchema) : s) ?? {};
  if (item.type === 'integer') {
    add(['abc'], 'not a number');
    add(['1.5'], 'a fraction');
    if (typeof item.minimum === 'number') add([String(item.minimum - 1)], 'below minimum');
    if (typeof item.maximum === 'number') add([String(item.maximum + 1)], 'above maximum');
    add(['99999999999999999999999'], 'past 2^53');
  }
  if (Array.isArray(item.enum)) add(['nope'], 'outside the enum');
  if (typeof item.pattern === 'string') add(['Not A Match!'], 'not matching its pattern');
  if (item.format === 'uuid') add(['not-a-uuid'], 'not a uuid');
  if (typeof item.maxLength === 'number') add(['x'.repeat(item.maxLength + 1)], `maxLength ${item.maxLength} + 1`);
  if (s.type === 'array' && typeof s.maxItems === 'number') {
    const one = Array.isArray(item.enum) ? String(item.enum[0]) : 'a';
    add(
      Array.from({ length: s.maxItems + 1 }, () => one),
      `maxItems ${s.maxItems} + 1`,
    );
  }
  if (s.type !== 'array' && item.type === 'integer') add(['1', '2'], 'repeated');
  // Percent-encoded bytes that are not UTF-8, and a NUL: decoded leniently, they must still be refused.
  add(['%FF'], 'bad UTF-8', false);
  add(['%C3%28'], 'a broken UTF-8 sequence', false);
  add(['%00'], 'a NUL', false);
  return out;
}

const HEADER_BREAKS: Record<string, string[]> = {
  // (Not leading or trailing spaces: HTTP trims those from header values before anyone reads them.)
  'idempotency-key': ['inner space', 'x'.repeat(201), 'é-not-ascii', '-starts-with-dash', 'k'.repeat(8000)],
  'x-correlation-id': ['nope', `${randomUUID()}0`],
  'x-context-manifest-digest': ['md5:1', `sha256:${'A'.repeat(64)}`],
  'if-match': ['3', '"three"', '"-1"', `"${'9'.repeat(12)}"`, '*'],
};

interface Drawn {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  query: Query;
  headers: Record<string, string>;
  body?: unknown;
  /** Which credential: the key (default), none, an unknown key, or a member's session. */
  as: 'key' | 'none' | 'unknown_key' | 'approver' | 'owner';
  how: string;
  kind: 'valid' | 'broken';
  documented: boolean;
}

/** The query string, values already encoded (raw garbage like %FF is kept as is). */
function urlOf(d: Drawn): string {
  const qs = d.query.map(([k, v]) => `${k}=${v}`).join('&');
  return qs ? `${d.path}?${qs}` : d.path;
}

const enc = (v: string) => (/%[0-9A-F]{2}/.test(v) && !/[^%0-9A-Za-z]/.test(v) ? v : encodeURIComponent(v));

/**
 * format=sse holds the response open for the lease: a drawn lease_ms or poll_ms that the stream
 * would accept (one value, in range) is made a few ms, and an absent one is added. Broken values
 * (repeated, out of range, not numbers) are left alone: they must be refused before any stream.
 */
function shortLease(query: Query): Query {
  if (!query.some(([k, v]) => k === 'format' && v === 'sse')) return query;
  const short: Record<string, string> = { lease_ms: '20', poll_ms: '5' };
  const max: Record<string, number> = { lease_ms: 300_000, poll_ms: 10_000 };
  const count = (k: string) => query.filter(([name]) => name === k).length;
  const accepted = (k: string, v: string) => count(k) === 1 && /^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= max[k]!;
  const out = query.map(([k, v]): [string, string] => (k in short && accepted(k, v) ? [k, short[k]!] : [k, v]));
  for (const k of Object.keys(short)) if (count(k) === 0) out.push([k, short[k]!]);
  return out;
}

function requestsFor(template: string, method: 'GET' | 'POST' | 'PATCH', op: Operation, as: Drawn['as']) {
  const pathParams = paramsOf(op, 'path');
  const queryParams = paramsOf(op, 'query');
  const headerParams = paramsOf(op, 'header');
  const bodySchema = bodySchemaOf(op);

  const pathArb = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, pathParam(p)]))) as fc.Arbitrary<Record<string, string>>;
  const queryArb = fc
    .tuple(...queryParams.map((p) => fc.option(queryValues(p.name, p.schema, template), { nil: undefined, freq: 2 })))
    .map((values) => values.flatMap((v, i) => (v ?? []).map((x) => [queryParams[i]!.name, enc(x)] as [string, string])));
  const headerArb = fc
    .tuple(...headerParams.map((p) => fc.option(validValue(p.schema, ctx), { nil: undefined, freq: 2 })))
    .map((values) => Object.fromEntries(values.flatMap((v, i) => (v === undefined ? [] : [[headerParams[i]!.name, String(v)]]))));
  const bodyArb = bodySchema ? validValue(bodySchema, ctx) : fc.constant(undefined);
  const fill = (params: Record<string, string>) => template.replace(/\{([^}]+)\}/g, (_, name: string) => params[name]!);

  const valid: fc.Arbitrary<Drawn> = fc.record({ params: pathArb, query: queryArb, headers: headerArb, body: bodyArb }).map((r) => ({
    method,
    path: fill(r.params),
    query: shortLease(r.query),
    headers: r.headers,
    body: r.body,
    as,
    how: 'valid',
    kind: 'valid',
    documented: true,
  }));

  // Broken in exactly one place: the body, a query parameter, a header, a path parameter, an unknown
  // query parameter, or the credential.
  const breaks: fc.Arbitrary<Drawn>[] = [];
  if (bodySchema) {
    breaks.push(
      fc
        .tuple(valid, brokenValue(bodySchema, ctx))
        .map(([d, b]) => ({ ...d, body: b.value, how: b.how, kind: 'broken', documented: b.documented })),
    );
  }
  for (const p of queryParams) {
    const options = queryBreaks(p);
    breaks.push(
      fc.tuple(valid, fc.constantFrom(...options)).map(([d, b]) => ({
        ...d,
        query: shortLease([...d.query.filter(([k]) => k !== p.name), ...b.values.map((v) => [p.name, enc(v)] as [string, string])]),
        how: b.how,
        kind: 'broken',
        documented: b.documented,
      })),
    );
  }
  for (const p of headerParams) {
    const values = HEADER_BREAKS[p.name];
    if (!values) throw new Error(`no breaks for the header ${p.name}`);
    breaks.push(
      fc.tuple(valid, fc.constantFrom(...values)).map(([d, v]) => ({
        ...d,
        headers: { ...d.headers, [p.name]: v },
        how: `header ${p.name}: ${v.slice(0, 20)}`,
        kind: 'broken',
        documented: true,
      })),
    );
  }
  for (const p of pathParams) {
    breaks.push(
      fc.tuple(valid, fc.constantFrom(...GARBAGE_SEGMENTS)).map(([d, g]) => {
        const params = Object.fromEntries(pathParams.map((q) => [q.name, d.path.split('/')[template.split('/').indexOf(`{${q.name}}`)]!]));
        return { ...d, path: fill({ ...params, [p.name]: g }), how: `path ${p.name}: ${g.slice(0, 20)}`, kind: 'broken', documented: true };
      }),
    );
  }
  breaks.push(
    fc.tuple(valid, fc.constantFrom('colour', 'workspaceId', '__proto__', 'constructor', '%FF')).map(([d, name]) => ({
      ...d,
      query: [...d.query, [name, 'x'] as [string, string]],
      how: `unknown query parameter ${name}`,
      kind: 'broken',
      documented: true,
    })),
  );
  if (!isPublic(op) && as === 'key') {
    breaks.push(
      fc.tuple(valid, fc.constantFrom<Drawn['as']>('none', 'unknown_key')).map(([d, who]) => ({
        ...d,
        as: who,
        how: `credential: ${who}`,
        kind: 'broken',
        documented: true,
      })),
    );
  }
  return { valid, broken: fc.oneof(...breaks) };
}

/** Body fields that name a record of the workspace (`id` is left out: a decision option's id is any text). */
const RECORD_FIELDS = new Set(['task_id', 'run_id', 'initiative_id', 'workstream_id', 'milestone_id', 'checkpointId']);

/** True when `body` names another workspace's record in one of RECORD_FIELDS, at any depth. */
function namesForeignRecord(body: unknown): boolean {
  const todo = [body];
  while (todo.length > 0) {
    const v = todo.pop();
    if (!v || typeof v !== 'object') continue;
    for (const [k, member] of Object.entries(v)) {
      if (RECORD_FIELDS.has(k) && typeof member === 'string' && real.foreign.includes(member.toLowerCase())) return true;
      todo.push(member);
    }
  }
  return false;
}

/** Sends a drawn request and holds the answer to the document and to "a 4xx writes nothing". */
async function send(d: Drawn): Promise<ApiResponse> {
  const opts: RequestOptions = { headers: d.headers };
  if (d.as === 'none') opts.key = null;
  else if (d.as === 'unknown_key') opts.key = `awk_${'Z'.repeat(43)}`;
  else if (d.as === 'approver') opts.session = approver.session;
  else if (d.as === 'owner') opts.session = owner.session;
  if (d.method !== 'GET') {
    opts.rawBody = d.body === undefined ? '' : jsonText(d.body);
    opts.headers = { ...d.headers, 'content-type': 'application/json' };
  }
  const label = `${d.method} ${urlOf(d).slice(0, 200)} [${d.kind}: ${d.how}] as ${d.as}`;

  const before = await app.counts();
  // app.request holds the status and body to the document.
  const res = await app.request(d.method, urlOf(d), opts);
  const code: string | undefined = res.body?.error?.code;
  expect(res.status, `${label} → ${res.text.slice(0, 300)}`).toBeLessThan(500);
  if (res.status >= 400) {
    expect(await app.counts(), `${label} wrote on a ${res.status}`).toEqual(before);
    // The envelope's code belongs to the status it came with (the validator's own codes aside).
    if (code !== undefined && isErrorCode(code)) expect(errorTable[code].status, label).toBe(res.status);
  }
  if (d.kind === 'broken' && d.documented) {
    // The public validator's answer to a document that is not a receipt is 200 with valid: false.
    const judged = d.path === '/agent-work-receipts/validate' && res.status === 200 && res.body.valid === false;
    if (!judged) expect(res.status, `${label} → ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  }
  // A parameter no operation defines is named as such (not lost among other errors), on every
  // operation with the API's envelope, the public validator (own shape, ignores queries) aside.
  if (d.how.startsWith('unknown query parameter') && d.as === 'key' && d.path !== '/agent-work-receipts/validate' && res.status !== 403) {
    expect(code, `${label} → ${res.text.slice(0, 300)}`).toBe('unknown_field');
  }
  // An id of another workspace in a field that names a record is never taken (404 or 403, as an
  // unknown id is): a drawn request can carry one in any such field of any body.
  if (d.method !== 'GET' && d.as === 'key' && namesForeignRecord(d.body)) {
    expect(res.status, `${label} named another workspace's record → ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  }
  // What the document says is well-formed is never refused for its form.
  if (d.kind === 'valid')
    expect(['invalid_json', 'unknown_field', 'unsupported_media_type'], `${label} → ${res.text.slice(0, 300)}`).not.toContain(code);
  return res;
}

const RUNS = { valid: 15, broken: 30 };

describe('the document drives the requests', () => {
  it('the served document is the one the requests are drawn from', async () => {
    const served = await app.request('GET', '/openapi.json', { key: null });
    expect(served.body).toEqual(doc);
  });

  it('uses only JSON Schema keywords the generator understands', () => {
    const used = new Set<string>();
    for (const { op } of operations) {
      const body = bodySchemaOf(op);
      if (body) keywordsIn(body, { resolve }, used);
      for (const p of op.parameters ?? []) keywordsIn(p.schema, { resolve }, used);
    }
    expect([...used].filter((k) => !SUPPORTED_KEYWORDS.has(k))).toEqual([]);
    expect(operations.length).toBeGreaterThanOrEqual(30);
  });
});

describe('every operation, valid and broken requests', () => {
  for (const { template, method, op } of operations) {
    it(`${method} ${template}`, async () => {
      const human = sessionOnly(op);
      // Agents first (for human-only operations every well-formed request is 403 human_session_required) …
      const { valid, broken } = requestsFor(template, method, op, 'key');
      await fc.assert(
        fc.asyncProperty(valid, async (d) => {
          const res = await send(d);
          if (human) {
            expect(res.status, d.how).toBe(403);
            expect(res.body.error.code).toBe('human_session_required');
          }
        }),
        { numRuns: RUNS.valid, endOnFailure: true },
      );
      await fc.assert(
        fc.asyncProperty(broken, async (d) => void (await send(d))),
        { numRuns: RUNS.broken, endOnFailure: true },
      );
      // … then the humans these operations are for: an approver, and an owner (who alone may cancel).
      if (human) {
        for (const who of ['approver', 'owner'] as const) {
          const signedIn = requestsFor(template, method, op, who);
          await fc.assert(
            fc.asyncProperty(fc.oneof(signedIn.valid, signedIn.broken), async (d) => void (await send(d))),
            { numRuns: RUNS.valid, endOnFailure: true },
          );
        }
      }
    });
  }
});

describe('a repeated query parameter is refused, never one of its values picked', () => {
  // Both forms of GET /events/stream read the query the same way (event-page.ts, queryInput): a
  // repeat becomes an array, which a scalar parameter's schema refuses.
  it('the SSE form refuses repeated lease_ms, poll_ms, limit and cursor', async () => {
    for (const repeat of ['lease_ms=10&lease_ms=20', 'poll_ms=5&poll_ms=6', 'limit=5&limit=6', 'cursor=a&cursor=b']) {
      const query = ['format=sse', repeat, ...['lease_ms=20', 'poll_ms=5'].filter((p) => !repeat.startsWith(p.split('=')[0]!))];
      const res = await app.request('GET', `/events/stream?${query.join('&')}`);
      expect(res.status, repeat).toBe(400);
      expect(res.body.error.code, repeat).toBe('validation_failed');
    }
  });
  it('the JSON form refuses the same repeats', async () => {
    for (const repeat of ['limit=5&limit=6', 'cursor=a&cursor=b']) {
      const res = await app.request('GET', `/events/stream?${repeat}`);
      expect(res.status, repeat).toBe(400);
    }
  });
});

// ---- JSON bombs and hostile transport ---------------------------------------------------------

const json = { 'content-type': 'application/json' };

function expectEnvelope(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text.slice(0, 300)).toBe(status);
  expect(res.body.error).toMatchObject({ code, requestId: res.headers.get('x-request-id') });
}

/** `{"a":` × depth … `}` × depth, and `[` × depth … `]` × depth around `inner`. */
const deepObject = (depth: number, inner = '1') => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);
const deepArray = (depth: number, inner = '') => '['.repeat(depth) + inner + ']'.repeat(depth);

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

/** A running run of its own: the property tests above may have finished or cancelled the seeded ones. */
async function freshRun(): Promise<string> {
  const work = await ok(app.request('POST', '/work', { body: { title: 'a run of its own' } }), 201);
  return (await ok(app.request('POST', '/runs', { body: { task_id: work.body.data.taskId } }), 201)).body.data.runId;
}

describe('JSON bombs', () => {
  it('100,000 levels of [ and of {"a": (under 1 MiB) are a quick 400 in the envelope, as a body and inside a field', async () => {
    // Before the depth limit, a checkpoint state 5,000 levels deep was a 500 (JSON.stringify overflowed its stack).
    const run = await freshRun();
    const bombs = [
      { path: '/work', raw: deepArray(100_000) },
      { path: '/work', raw: deepObject(100_000) },
      { path: '/work', raw: `{"title":"t","description":${deepArray(100_000, '"x"')}}` },
      { path: '/work', raw: `{"title":${deepObject(100_000)}}` },
      // The one free-form field of the API: a checkpoint's state.
      { path: `/runs/${run}/checkpoints`, raw: `{"label":"deep","state":${deepObject(100_000)}}` },
      { path: `/runs/${run}/checkpoints`, raw: `{"label":"deep","state":{"a":${deepArray(100_000)}}}` },
      { path: `/runs/${run}/checkpoints`, raw: `{"label":"deep","state":${deepObject(5_000)}}` },
      { path: '/decisions', raw: `{"workspace_id":"${app.ws.workspaceId}","title":"t","shape_context":${deepObject(100_000)}}` },
      // The import reads with the receipt reader: its depth limit is a field rule there.
      { path: '/agent-work-receipts/import', raw: `{"receipt":${deepArray(100_000)}}`, code: 'validation_failed' },
    ];
    for (const { path, raw, code = 'invalid_json' } of bombs) {
      expect(raw.length).toBeLessThan(1024 * 1024);
      await app.expectUnchanged(async () => {
        const { value: res, ms } = await timed(() => app.request('POST', path, { rawBody: raw, headers: json }));
        expect(res.status, `${path} ${raw.slice(0, 40)} → ${res.text.slice(0, 200)}`).toBe(400);
        expect(res.body.error.code).toBe(code);
        expect(ms, path).toBeLessThan(2000);
      });
    }
    // The public validator reads with its own strict reader and answers in its own shape.
    const validated = await app.request('POST', '/agent-work-receipts/validate', { key: null, rawBody: deepArray(100_000), headers: json });
    expect(validated.status).toBe(422);
    expect(validated.body.error.code).toBe('input.structure_limit');
  });

  it('the web interface’s /api/trpc, which reads bodies without that limit, refuses a deep state too (400, not a 500)', async () => {
    const trpc = createInternalTrpcHandler(async () => app.runtime);
    const run = await freshRun();
    const headers = {
      'content-type': 'application/json',
      cookie: `next-auth.session-token=${owner.session}`,
      origin: 'http://127.0.0.1:3000',
    };
    await app.expectUnchanged(async () => {
      for (const state of [deepObject(5_000), `{"a":${deepArray(100_000)}}`]) {
        const body = `{"runId":"${run}","label":"deep","state":${state}}`;
        const res = await trpc(new Request('http://127.0.0.1:3000/api/trpc/runs.checkpoint', { method: 'POST', headers, body }));
        expect(res.status, (await res.clone().text()).slice(0, 300)).toBe(400);
      }
    });
    // A shallow one still goes through that way.
    const body = JSON.stringify({ runId: run, label: 'shallow', state: { a: [1, { b: 2 }] } });
    const res = await trpc(new Request('http://127.0.0.1:3000/api/trpc/runs.checkpoint', { method: 'POST', headers, body }));
    expect(res.status).toBe(200);
  });

  it('what no store keeps (U+0000, lone surrogates, 1e400), in free-form JSON or any field, is 400 validation_failed with its JSON pointer; the validator agrees with the import', async () => {
    // Before: PostgreSQL refused them (22P05, 22P02, "Infinity is not allowed") and the answer was a 500.
    const run = await freshRun();
    const cases: [path: string, raw: string, pointer: string][] = [
      [`/runs/${run}/checkpoints`, '{"label":"nul","state":{"note":"a\\u0000b"}}', '/state/note'],
      [`/runs/${run}/checkpoints`, '{"label":"lone","state":{"list":[1,"\\ud800"]}}', '/state/list/1'],
      [`/runs/${run}/checkpoints`, '{"label":"name","state":{"a/b\\udc00":true}}', '/state/a~1b\udc00'],
      [`/runs/${run}/checkpoints`, '{"label":"big","state":{"n":1e400}}', '/state/n'],
      ['/work', '{"title":"t\\u0000"}', '/title'],
      ['/work', '{"title":"t","estimate_hours":-1e999}', '/estimate_hours'],
    ];
    for (const [path, raw, pointer] of cases) {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', path, { rawBody: raw, headers: json });
        expectEnvelope(res, 400, 'validation_failed');
        expect(res.body.error.details.issues, raw).toEqual([expect.objectContaining({ pointer })]);
      });
    }
    // A receipt: the import refuses it, and the validator no longer calls it valid.
    const receipt = JSON.stringify(sampleReceipt()).replace('"Summarise interviews"', '"Summarise\\u0000interviews"');
    expect(receipt).toContain('\\u0000');
    await app.expectUnchanged(async () => {
      const imported = await app.request('POST', '/agent-work-receipts/import', { rawBody: receipt, headers: json });
      expectEnvelope(imported, 400, 'validation_failed');
      expect(imported.body.error.details.issues[0].path).toBe('/task/title');
    });
    const validated = await app.request('POST', '/agent-work-receipts/validate', { key: null, rawBody: receipt, headers: json });
    expect(validated.status).toBe(200);
    expect(validated.body).toMatchObject({ ok: true, valid: false, issues: [{ path: '/task/title', code: 'input.unstorable' }] });
    // The web interface's /api/trpc (JSON.parse, then the state's schema) refuses them too.
    const trpc = createInternalTrpcHandler(async () => app.runtime);
    const headers = {
      'content-type': 'application/json',
      cookie: `next-auth.session-token=${owner.session}`,
      origin: 'http://127.0.0.1:3000',
    };
    await app.expectUnchanged(async () => {
      for (const state of ['{"note":"a\\u0000b"}', '{"list":[1,"\\ud800"]}', '{"n":1e400}']) {
        const body = `{"runId":"${run}","label":"x","state":${state}}`;
        const res = await trpc(new Request('http://127.0.0.1:3000/api/trpc/runs.checkpoint', { method: 'POST', headers, body }));
        expect(res.status, `${state} → ${(await res.clone().text()).slice(0, 300)}`).toBe(400);
      }
    });
  });

  it('nesting is limited to 64 levels, counting the body itself: a state 64 deep is kept, 65 is 400 invalid_json', async () => {
    const run = await freshRun();
    // body (1) → state (2) → 62 more levels = 64.
    const at64 = `{"label":"64 deep","state":${deepObject(62, '{}')}}`;
    const kept = await app.request('POST', `/runs/${run}/checkpoints`, { rawBody: at64, headers: json });
    expect(kept.status, kept.text.slice(0, 300)).toBe(201);
    expect(JSON.stringify(kept.body.data.state)).toBe(deepObject(62, '{}'));
    await app.expectUnchanged(async () => {
      const at65 = `{"label":"65 deep","state":${deepObject(63, '{}')}}`;
      const refused = await app.request('POST', `/runs/${run}/checkpoints`, { rawBody: at65, headers: json });
      expectEnvelope(refused, 400, 'invalid_json');
      expect(refused.body.error.message).toMatch(/64 levels/);
    });
  });

  it('an array of 200,000 numbers in a field is a quick 400 with a bounded list of issues', async () => {
    const numbers = `[${Array.from({ length: 200_000 }, (_, i) => i % 10).join(',')}]`;
    expect(numbers.length).toBeLessThan(1024 * 1024);
    const cases = [
      { path: '/work', raw: `{"title":"t","tags":${numbers}}` },
      { path: '/initiatives', raw: `{"title":"t","workstreams":${numbers}}` },
      { path: '/decisions', raw: `{"workspace_id":"${app.ws.workspaceId}","title":"t","shape_context":{"options":${numbers}}}` },
      { path: `/runs/${real.runs[0]}/checkpoints`, raw: `{"label":"big","state":{"n":${numbers}}}` },
      { path: '/lifecycle', raw: `{"level":"task","id":${numbers},"action":"pause"}` },
    ];
    for (const { path, raw } of cases) {
      await app.expectUnchanged(async () => {
        const { value: res, ms } = await timed(() => app.request('POST', path, { rawBody: raw, headers: json }));
        expect(res.status, `${path} → ${res.text.slice(0, 200)}`).toBe(400);
        expect(ms, path).toBeLessThan(3000);
        // An answer about 200,000 wrong items must not be 200,000 issues long.
        expect(res.text.length, path).toBeLessThan(64 * 1024);
        if (res.body.error.details.issues) expect(res.body.error.details.issues.length).toBeLessThanOrEqual(100);
      });
    }
  });

  it('duplicate keys are 400 invalid_json naming the key, at the top and nested (RFC 7493: names MUST be unique)', async () => {
    const run = await freshRun();
    const cases = [
      { path: '/work', raw: '{"title":"a","title":"b"}', key: 'title' },
      // Escapes spell the same name: "t\u0069tle" is "title".
      { path: '/work', raw: '{"title":"a","t\\u0069tle":"b"}', key: 'title' },
      { path: '/initiatives', raw: '{"title":"t","execution_policy":{"mode":"parallel","mode":"manual"}}', key: 'mode' },
      { path: `/runs/${run}/checkpoints`, raw: '{"label":"l","state":{"a":[{"x":1,"y":2,"x":3}]}}', key: 'x' },
      {
        path: '/decisions',
        raw: `{"workspace_id":"${app.ws.workspaceId}","title":"t","urgency":"critical","urgency":"deferred"}`,
        key: 'urgency',
      },
    ];
    for (const { path, raw, key } of cases) {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', path, { rawBody: raw, headers: json });
        expectEnvelope(res, 400, 'invalid_json');
        expect(res.body.error.message).toContain(`"${key}"`);
        // An idempotent retry of the same bytes is refused the same way (no fingerprint of an ambiguous body).
        const again = await app.request('POST', path, { rawBody: raw, headers: { ...json, 'idempotency-key': 'dup-keys' } });
        expectEnvelope(again, 400, 'invalid_json');
      });
    }
    // The same names in different objects are not duplicates.
    const fine = await app.request('POST', `/runs/${run}/checkpoints`, {
      rawBody: '{"label":"same names, other objects","state":{"a":{"a":1},"b":{"a":2},"list":[{"a":1},{"a":2}]}}',
      headers: json,
    });
    expect(fine.status, fine.text).toBe(201);
  });

  it('the duplicate-key check is linear: a 1 MiB body of 43,500 objects is answered in well under a second', async () => {
    const objects = Array.from({ length: 43_500 }, (_, i) => `{"k${i % 7}":${i},"v":"${'x'.repeat(4)}"}`).join(',');
    const raw = `{"label":"many","state":{"list":[${objects}]}}`;
    const run = await freshRun();
    expect(raw.length).toBeGreaterThan(1_000_000);
    expect(raw.length).toBeLessThan(1024 * 1024);
    const { value: res, ms } = await timed(() => app.request('POST', `/runs/${run}/checkpoints`, { rawBody: raw, headers: json }));
    // Over 64 KiB of state: refused by the field rule, after the whole body was read and checked.
    expectEnvelope(res, 400, 'validation_failed');
    expect(ms).toBeLessThan(1000);
  });

  it('__proto__, constructor and prototype members: unknown fields in closed bodies, plain data in a free-form state at every level; nothing is polluted', async () => {
    // Before: zod rebuilt `state` by assignment and dropped a top-level __proto__ member silently
    // (one level down it was kept), so the state stored differed from the body fingerprinted.
    for (const [raw, field] of [
      ['{"title":"t","__proto__":{"polluted":"yes"}}', '__proto__'],
      ['{"__proto__":{"title":"from the prototype"}}', '__proto__'],
      ['{"title":"t","\\u005f_proto__":{"polluted":"yes"}}', '__proto__'],
      ['{"title":"t","constructor":{"prototype":{"polluted":"yes"}}}', 'constructor'],
      ['{"title":"t","prototype":1}', 'prototype'],
      ['{"title":"t","toString":"x"}', 'toString'],
    ] as const) {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/work', { rawBody: raw, headers: json });
        expectEnvelope(res, 400, 'unknown_field');
        expect(res.body.error.details.fields).toEqual([field]);
      });
    }
    const nested = await app.request('POST', '/initiatives', {
      rawBody: '{"title":"t","execution_policy":{"__proto__":{"mode":"manual"}}}',
      headers: json,
    });
    expectEnvelope(nested, 400, 'unknown_field');
    expect(nested.body.error.details.fields).toEqual(['execution_policy.__proto__']);

    // A state keeps every member as data, exactly as sent, at the top and below.
    const run = await freshRun();
    const stateText =
      '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"prototype":1,' +
      '"toString":"x","nested":[{"__proto__":null,"constructor":null}]}';
    const rawBody = `{"label":"names","state":${stateText}}`;
    const kept = await app.request('POST', `/runs/${run}/checkpoints`, { rawBody, headers: { ...json, 'idempotency-key': 'proto-state' } });
    expect(kept.status, kept.text).toBe(201);
    const asSent = JSON.parse(stateText) as Record<string, unknown>;
    expect(Object.keys(kept.body.data.state)).toEqual(Object.keys(asSent));
    expect(kept.text).toContain(`"state":${stateText}`);
    const read = await app.request('GET', `/runs/${run}`);
    const checkpoint = read.body.data.checkpoints.find((c: { checkpointId: string }) => c.checkpointId === kept.body.data.checkpointId);
    // (Read back from jsonb, members come in the database's order: compared in canonical form.)
    expect(canonicalJson(checkpoint.state)).toBe(canonicalJson(asSent));
    const events = await app.request('GET', '/events/stream?type=run.checkpointed&limit=100');
    expect(canonicalJson(events.body.data.at(-1).payload.checkpoint.state)).toBe(canonicalJson(asSent));
    // The fingerprint and the stored state agree: the same bytes replay, a different __proto__ is another body.
    const replay = await app.request('POST', `/runs/${run}/checkpoints`, {
      rawBody,
      headers: { ...json, 'idempotency-key': 'proto-state' },
    });
    expect(replay.status).toBe(200);
    expect(replay.body.data.checkpointId).toBe(kept.body.data.checkpointId);
    const other = rawBody.replace('"polluted":"yes"}', '"polluted":"no"}');
    const conflict = await app.request('POST', `/runs/${run}/checkpoints`, {
      rawBody: other,
      headers: { ...json, 'idempotency-key': 'proto-state' },
    });
    expectEnvelope(conflict, 422, 'idempotency_conflict');
    // The chain hashes and verifies with them.
    expect((await app.request('GET', '/ledger/verify')).body.data).toMatchObject({ ok: true, firstBreak: null });

    expect(({} as any).polluted).toBeUndefined();
    expect((Object.prototype as any).title).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('polluted');
  });

  it('refs named like Object.prototype members (constructor, toString) are ordinary refs; __proto__ is refused as a ref', async () => {
    const body = {
      title: 'prototype-named refs',
      workstreams: [
        { ref: 'constructor', name: 'A', milestones: [{ ref: 'toString', title: 'M', tasks: [{ ref: 'valueOf', title: 'T' }] }] },
        { ref: 'hasOwnProperty', name: 'B', depends_on: ['constructor'] },
      ],
    };
    const res = await app.request('POST', '/initiatives', { body });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body.data.refs).sort()).toEqual(['constructor', 'hasOwnProperty', 'toString', 'valueOf']);
    const b = res.body.data.tree.workstreams.find((w: { name: string }) => w.name === 'B');
    expect(b.depends_on).toEqual([res.body.data.refs.constructor]);
    // A depends_on naming an inherited member that is not a ref is an unknown ref.
    const unknown = await app.request('POST', '/initiatives', {
      body: { title: 't', workstreams: [{ name: 'A', depends_on: ['toString'] }] },
    });
    expectEnvelope(unknown, 400, 'validation_failed');
    // The ref comes back as a key of `refs`, where __proto__ cannot be one: refused, not silently dropped.
    await app.expectUnchanged(async () => {
      const proto = await app.request('POST', '/initiatives', { body: { title: 't', workstreams: [{ ref: '__proto__', name: 'A' }] } });
      expectEnvelope(proto, 400, 'validation_failed');
      expect(proto.body.error.details.issues[0].path).toBe('workstreams.0.ref');
    });
  });
});

// ---- transport: headers, encodings ---------------------------------------------------------------

describe('hostile transport', () => {
  /** Writes `head` (and `body`) to a raw socket and reads the answer to the end. */
  function raw(head: Buffer, body: Buffer = Buffer.alloc(0)): Promise<{ status: number; head: string; body: string }> {
    const { port } = new URL(app.url);
    return new Promise((resolve, reject) => {
      // Written, not ended: a half-closed socket may be closed by the server before it answers.
      // Connection: close makes the server close it once it has.
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(Buffer.concat([head, body])));
      socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
      const chunks: Buffer[] = [];
      socket.on('data', (c) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('latin1');
        const [headText = '', bodyText = ''] = text.split('\r\n\r\n');
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headText)?.[1] ?? 0), head: headText, body: bodyText });
      });
    });
  }
  const headOf = (lines: (string | Buffer)[]) =>
    Buffer.concat([
      ...lines.map((l) => Buffer.concat([typeof l === 'string' ? Buffer.from(l, 'latin1') : l, Buffer.from('\r\n')])),
      Buffer.from('\r\n'),
    ]);
  const postHead = (path: string, extra: (string | Buffer)[], length: number) =>
    headOf([
      `POST /api/v1${path} HTTP/1.1`,
      'Host: 127.0.0.1',
      `Authorization: Bearer ${app.ws.apiKey}`,
      'Content-Type: application/json',
      `Content-Length: ${length}`,
      'Connection: close',
      ...extra,
    ]);
  const envelope = (text: string) => JSON.parse(text) as { error: { code: string; requestId: string } };

  it('headers over node’s limit (16 KiB) are 431 from the server, never a 500; the server goes on', async () => {
    const many = (count: number) => Array.from({ length: count }, (_, i) => `X-H${i}: v`);
    await app.expectUnchanged(async () => {
      const body = Buffer.from('{"title":"big headers"}');
      for (const header of [
        `X-Padding: ${'a'.repeat(20_000)}`,
        `Authorization: Bearer ${'A'.repeat(20_000)}`,
        `Idempotency-Key: ${'k'.repeat(20_000)}`,
      ]) {
        const res = await raw(postHead('/work', [header], body.length), body);
        expect(res.status, res.head).toBe(431);
      }
      // Many small headers: past the byte limit, 431 too.
      expect((await raw(postHead('/work', many(5000), body.length), body)).status).toBe(431);
    });
    // Under it node keeps the first 1000 and the request is served.
    const served = await raw(postHead('/work', many(1500), 16), Buffer.from('{"title":"many"}'));
    expect(served.status).toBe(201);
    const after = await raw(postHead('/work', [], 17), Buffer.from('{"title":"after"}'));
    expect(after.status).toBe(201);
  });

  it('an over-long Authorization header (under the limit) is 401 and an over-long Idempotency-Key is 400, in the envelope', async () => {
    await app.expectUnchanged(async () => {
      for (const authorization of [`Bearer awk_${'A'.repeat(12_000)}`, `Bearer ${'x'.repeat(12_000)}`, `${'Bearer '.repeat(1500)}`]) {
        const res = await app.request('POST', '/work', { body: { title: 't' }, headers: { authorization } });
        expectEnvelope(res, 401, 'unauthorized');
      }
      const over = await app.request('POST', '/work', { body: { title: 't' }, headers: { 'idempotency-key': 'k'.repeat(12_000) } });
      expectEnvelope(over, 400, 'invalid_idempotency_key');
      // Over real HTTP, through the production adapter, too.
      const body = Buffer.from('{"title":"t"}');
      const res = await raw(postHead('/work', [`Idempotency-Key: ${'k'.repeat(12_000)}`], body.length), body);
      expect(res.status).toBe(400);
      expect(envelope(res.body).error.code).toBe('invalid_idempotency_key');
      const longKey = headOf([
        'POST /api/v1/work HTTP/1.1',
        'Host: 127.0.0.1',
        `Authorization: Bearer awk_${'A'.repeat(12_000)}`,
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        'Connection: close',
      ]);
      const refused = await raw(longKey, body);
      expect(refused.status).toBe(401);
      expect(envelope(refused.body).error.code).toBe('unauthorized');
    });
  });

  it('bytes that are not UTF-8 in header values are refused in the envelope (or by the HTTP parser), never a 500', async () => {
    await app.expectUnchanged(async () => {
      const body = Buffer.from('{"title":"t"}');
      const cases: { header: Buffer; code: string; status: number }[] = [
        { header: Buffer.from([...Buffer.from('Idempotency-Key: key-'), 0xff, 0xfe]), code: 'invalid_idempotency_key', status: 400 },
        {
          header: Buffer.from([...Buffer.from('X-Correlation-Id: '), 0xc3, 0x28, ...Buffer.from(randomUUID().slice(2))]),
          code: 'validation_failed',
          status: 400,
        },
        {
          header: Buffer.from([...Buffer.from('X-Context-Manifest-Digest: sha256:'), 0xff, ...Buffer.from('0'.repeat(63))]),
          code: 'validation_failed',
          status: 400,
        },
      ];
      for (const c of cases) {
        const res = await raw(postHead('/work', [c.header], body.length), body);
        expect(res.status, res.head).toBe(c.status);
        expect(envelope(res.body).error.code).toBe(c.code);
      }
      // A key with a byte that is not UTF-8 is an unknown key.
      const badKey = Buffer.from([...Buffer.from('Authorization: Bearer awk_'), 0xff, ...Buffer.from('A'.repeat(42))]);
      const head = headOf([
        'POST /api/v1/work HTTP/1.1',
        'Host: 127.0.0.1',
        badKey,
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        'Connection: close',
      ]);
      const unknown = await raw(head, body);
      expect(unknown.status).toBe(401);
      expect(envelope(unknown.body).error.code).toBe('unauthorized');
      // Control characters are refused by node's HTTP parser itself (400, no envelope): still not a 500.
      const nul = await raw(postHead('/work', [Buffer.from([...Buffer.from('Idempotency-Key: a'), 0x00, 0x62])], body.length), body);
      expect(nul.status).toBe(400);
    });
  });

  it('bodies that are not UTF-8 are 400 on every reader: the API’s, the import’s and the public validator’s', async () => {
    const bad = Buffer.from([...Buffer.from('{"title":"'), 0xc3, 0x28, ...Buffer.from('"}')]);
    await app.expectUnchanged(async () => {
      const work = await raw(postHead('/work', [], bad.length), bad);
      expect(work.status).toBe(400);
      expect(envelope(work.body).error.code).toBe('invalid_json');
      const imported = await raw(postHead('/agent-work-receipts/import', [], bad.length), bad);
      expect(imported.status).toBe(400);
      expect(envelope(imported.body).error.code).toBe('invalid_json');
      const validated = await app.request('POST', '/agent-work-receipts/validate', {
        key: null,
        rawBody: new Uint8Array(bad),
        headers: json,
      });
      expect(validated.status).toBe(400);
      expect(validated.body.error.code).toBe('input.invalid_json');
    });
    // Valid UTF-8 split inside a character ("é") across two chunks is read whole: not refused.
    const text = Buffer.from('{"title":"héllo wörld"}');
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${app.url}/api/v1/work`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.ws.apiKey}`, 'content-type': 'application/json' },
      });
      req.on('response', (r) => {
        let b = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (b += c));
        r.on('end', () => resolve({ status: r.statusCode!, body: b }));
      });
      req.on('error', reject);
      req.write(text.subarray(0, 12)); // ends inside "é"
      setTimeout(() => req.end(text.subarray(12)), 20);
    });
    expect(res.status, res.body).toBe(201);
    expect(JSON.parse(res.body).data.task.title).toBe('héllo wörld');
  });

  it('percent-encoded bytes that are not UTF-8 in the query and the path are 4xx in the envelope', async () => {
    const urls = [
      '/events/stream?cursor=%FF',
      '/events/stream?type=%FF',
      '/events/stream?limit=%FF',
      '/events/stream?format=sse&last_event_id=%C3%28&lease_ms=20',
      '/decisions?cursor=%FF%FE',
      '/decisions?status=%FF',
      '/decisions?workspace_id=%FF',
      '/errors?code=%FF',
      '/initiatives/' + real.initiatives[0] + '?include=%FF',
      '/operating-map?initiative_id=%C0%AF',
      '/events/stream?%FF=1',
      '/decisions/%FF',
      '/runs/%C3%28',
      '/receipts/%ED%A0%80',
    ];
    await app.expectUnchanged(async () => {
      for (const url of urls) {
        const res = await app.request('GET', url, { key: url.startsWith('/errors') ? null : undefined });
        expect(res.status, `${url} → ${res.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
        expect(res.status, url).toBeLessThan(500);
        expect(res.body.error.code, url).toMatch(/^(invalid_cursor|validation_failed|unknown_field|not_found)$/);
      }
      // Over real HTTP too (node passes the raw target through).
      const res = await raw(
        headOf([
          'GET /api/v1/events/stream?cursor=%FF%00 HTTP/1.1',
          'Host: 127.0.0.1',
          `Authorization: Bearer ${app.ws.apiKey}`,
          'Connection: close',
        ]),
      );
      expect(res.status).toBe(400);
      expect(envelope(res.body).error.code).toBe('invalid_cursor');
    });
  });
});

// ---- forged cursors -------------------------------------------------------------------------------

describe('forged cursors', () => {
  /** Every way a client might pass a cursor to a paginated operation. */
  const spots = [
    {
      name: 'GET /events/stream ?cursor',
      url: (c: string) => `/events/stream?cursor=${encodeURIComponent(c)}`,
      mine: () => real.eventCursor,
      theirs: () => real.foreignEventCursor,
    },
    {
      name: 'GET /events/stream?format=sse ?last_event_id',
      url: (c: string) => `/events/stream?format=sse&lease_ms=20&last_event_id=${encodeURIComponent(c)}`,
      mine: () => real.eventCursor,
      theirs: () => real.foreignEventCursor,
    },
    {
      name: 'GET /events/stream?format=sse Last-Event-ID',
      url: () => '/events/stream?format=sse&lease_ms=20',
      header: true,
      mine: () => real.eventCursor,
      theirs: () => real.foreignEventCursor,
    },
    {
      name: 'GET /decisions ?cursor',
      url: (c: string) => `/decisions?cursor=${encodeURIComponent(c)}`,
      mine: () => real.decisionCursor,
      theirs: () => real.foreignDecisionCursor,
    },
    {
      name: 'GET /webhooks/{id}/deliveries ?cursor',
      url: (c: string) => `/webhooks/${real.webhooks[0]}/deliveries?limit=1&cursor=${encodeURIComponent(c)}`,
      mine: () => real.listCursors.webhookDeliveries!.mine,
      theirs: () => real.listCursors.webhookDeliveries!.theirs,
    },
    ...LISTS.map((list) => ({
      name: `GET /${list} ?cursor`,
      url: (c: string) => `/${list}?limit=1&cursor=${encodeURIComponent(c)}`,
      mine: () => real.listCursors[list]!.mine,
      theirs: () => real.listCursors[list]!.theirs,
    })),
  ];

  async function expectRefused(spot: (typeof spots)[number], cursor: string, codes = ['invalid_cursor']) {
    const res = await app.request('GET', spot.url(cursor), spot.header ? { headers: { 'last-event-id': cursor } } : {});
    expect(res.status, `${spot.name} ${cursor.slice(0, 60)} → ${res.text.slice(0, 200)}`).toBe(400);
    expect(codes, spot.name).toContain(res.body.error.code);
    // Nothing about what the cursor holds, or about the other workspace, comes back.
    expect(res.body.data).toBeUndefined();
    expect(res.text).not.toContain(other.workspaceId);
    expect(res.text).not.toMatch(/sequence|hmac|secret|c1\./i);
    return res;
  }

  it('these are all the operations of the document that take a cursor', () => {
    const withCursor = operations.filter(({ op }) => paramsOf(op, 'query').some((p) => p.name === 'cursor' || p.name === 'last_event_id'));
    expect(withCursor.map((o) => `${o.method} ${o.template}`).sort()).toEqual([
      'GET /artifacts',
      'GET /decisions',
      'GET /events/stream',
      'GET /initiatives',
      'GET /mcp-servers',
      'GET /receipts',
      'GET /runs',
      'GET /tasks',
      'GET /tool-calls',
      'GET /webhooks',
      'GET /webhooks/{id}/deliveries',
    ]);
  });

  for (const spot of spots) {
    it(`${spot.name}: random base64, one character changed, another workspace’s, over-long → 400 invalid_cursor, nothing leaked`, async () => {
      await app.expectUnchanged(async () => {
        // Its own cursor is accepted (so the refusals below are about the cursor, not the request).
        const accepted = await app.request('GET', spot.url(spot.mine()), spot.header ? { headers: { 'last-event-id': spot.mine() } } : {});
        expect(accepted.status, accepted.text.slice(0, 200)).toBe(200);

        await fc.assert(
          fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 90 }), fc.boolean(), async (bytes, dotted) => {
            const b64 = Buffer.from(bytes).toString('base64url');
            // The decisions cursor has the form <payload>.<signature>: forge that form too.
            await expectRefused(spot, dotted ? `${b64}.${b64.slice(0, 16)}` : b64);
          }),
          { numRuns: 15, endOnFailure: true },
        );
        const mine = spot.mine();
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        for (let i = 0; i < mine.length; i += Math.max(1, Math.floor(mine.length / 12))) {
          const c = mine[i]!;
          if (c === '.') continue;
          const swapped = alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]!;
          await expectRefused(spot, mine.slice(0, i) + swapped + mine.slice(i + 1));
        }
        await expectRefused(spot, `${mine}A`);
        await expectRefused(spot, mine.slice(0, -1));
        await expectRefused(spot, spot.theirs());
        // Past the documented maxLength: a field rule (validation_failed) or a cursor not issued here.
        for (const length of [513, 10_000]) await expectRefused(spot, 'A'.repeat(length), ['invalid_cursor', 'validation_failed']);
        await expectRefused(spot, mine.repeat(8), ['invalid_cursor', 'validation_failed']);
      });
    });
  }
});
