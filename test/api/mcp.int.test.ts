/**
 * The MCP endpoint (/mcp) driven by the SDK's own client over real HTTP: the tools are the REST
 * operations (same events, same errors, same idempotency), request_decision waits for a human
 * ruling made over REST by a signed-in approver, the resources read, and the endpoint refuses what
 * the REST API refuses (a wrong key, another workspace's ids, a body over the limit).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { integrateWorkspace } from '@/server/ledger/integrator';
import { signingOf } from '@/server/runtime';
import { startTestApp, type TestApp, type TestMember, type TestWorkspace } from '../support/app';

let app: TestApp;
let other: TestWorkspace;
let approver: TestMember;
const clients: Client[] = [];

beforeAll(async () => {
  app = await startTestApp();
  other = await app.createWorkspace();
  approver = await app.member('approver');
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await app?.close();
});

async function connect(key = app.ws.apiKey, capabilities: Record<string, unknown> = {}, target = app): Promise<Client> {
  const client = new Client({ name: 'mcp-int-test', version: '1' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', target.url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

/** The ledger's length (its head's sequence). */
async function ledgerLength(key = app.ws.apiKey): Promise<number> {
  const res = await app.request('GET', '/ledger/verify', { key });
  return res.body.data.head.sequence as number;
}

/** A POST to /mcp as a client without the SDK sends it; `key` null sends no Authorization. */
function rawPost(
  target: TestApp,
  body: unknown,
  opts: { key?: string | null; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  const key = opts.key === undefined ? target.ws.apiKey : opts.key;
  return fetch(new URL('/mcp', target.url), {
    method: 'POST',
    headers: {
      ...(key ? { Authorization: `Bearer ${key}` } : {}),
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...opts.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: opts.signal,
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const LIST_TOOLS = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const inSession = (sessionId: string) => ({ 'Mcp-Session-Id': sessionId, 'Mcp-Protocol-Version': '2025-11-25' });

/** A session opened by hand (for what the SDK's client does not let a test do): the headers its requests carry. */
async function rawSession(target: TestApp): Promise<Record<string, string>> {
  const init = await rawPost(target, INITIALIZE);
  expect(init.status).toBe(200);
  await init.text();
  return inSession(init.headers.get('mcp-session-id')!);
}

/** A raw tools/call of request_decision that waits `seconds`. */
const waitRequest = (id: number, title: string, seconds: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'request_decision', arguments: { title, wait_seconds: seconds } },
});

const errorOf = (result: CallToolResult) =>
  (result.structuredContent as { error: { code: string; message: string; requestId: string } }).error;

describe('tools over Streamable HTTP', () => {
  it('lists the tools, each with the REST operation’s input schema', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        'checkpoint',
        'claim_task',
        'consume_grant',
        'create_initiative',
        'create_work',
        'finish_run',
        'get_decision',
        'heartbeat',
        'list_tasks',
        'read_events',
        'register_artifact',
        'request_decision',
        'resume_run',
        'verify_ledger',
      ].sort(),
    );
    const create = tools.find((t) => t.name === 'create_work')!;
    expect(create.inputSchema.required).toContain('title');
    expect(Object.keys(create.inputSchema.properties!)).toEqual(expect.arrayContaining(['title', 'idempotency_key', 'correlation_id']));
    const wait = tools.find((t) => t.name === 'request_decision')!.inputSchema.properties!.wait_seconds as Record<string, unknown>;
    expect(wait).toMatchObject({ type: 'integer', minimum: 0, maximum: 600 });
  });

  it('create_work writes what POST /work writes', async () => {
    const client = await connect();
    const result = await call(client, 'create_work', { title: 'from MCP', priority: 'high' });
    expect(result.structuredContent).not.toHaveProperty('error');
    expect(result.isError).toBe(false);
    expect(result._meta?.['aws/status']).toBe(201);
    const viaMcp = (result.structuredContent as { data: { taskId: string } }).data.taskId;
    const rest = await app.request('POST', '/work', { body: { title: 'from REST', priority: 'high' } });
    expect(rest.status).toBe(201);
    const events = await app.request('GET', '/events/stream?limit=100');
    const of = (taskId: string) =>
      (events.body.data as { aggregateId: string; eventType: string; actorType: string; actorId: string }[])
        .filter((e) => e.aggregateId === taskId)
        .map((e) => ({ type: e.eventType, actor: `${e.actorType}:${e.actorId}` }));
    expect(of(viaMcp)).toEqual(of(rest.body.data.taskId));
    expect(of(viaMcp).length).toBeGreaterThan(0);
  });
});

describe('idempotency and refusals, as over REST', () => {
  it('an idempotency_key argument replays the first answer and records nothing new', async () => {
    const client = await connect();
    const args = { title: 'once only', idempotency_key: `mcp-${Date.now()}` };
    const first = await call(client, 'create_work', args);
    expect(first._meta?.['aws/status']).toBe(201);
    const length = await ledgerLength();
    const again = await call(client, 'create_work', args);
    expect(again._meta?.['aws/status']).toBe(200);
    expect((again.structuredContent as { data: { taskId: string } }).data.taskId).toBe(
      (first.structuredContent as { data: { taskId: string } }).data.taskId,
    );
    expect(await ledgerLength()).toBe(length);
    // The same key with other arguments: the REST answer, 422 idempotency_conflict.
    const conflict = await call(client, 'create_work', { ...args, title: 'another' });
    expect(conflict.isError).toBe(true);
    expect(errorOf(conflict).code).toBe('idempotency_conflict');
  });

  it('bad arguments get the contract’s error and change nothing', async () => {
    const client = await connect();
    await app.expectUnchanged(async () => {
      const missing = await call(client, 'create_work', {});
      expect(missing.isError).toBe(true);
      expect(errorOf(missing)).toMatchObject({ code: 'validation_failed', requestId: expect.any(String) });
      const unknown = await call(client, 'create_work', { title: 'x', colour: 'red' });
      expect(errorOf(unknown)).toMatchObject({ code: 'unknown_field' });
      const nul = await call(client, 'create_work', { title: 'a\u0000b' });
      expect(errorOf(nul).code).toBe('validation_failed');
      const tooLong = await call(client, 'request_decision', { title: 'wait too long', wait_seconds: 601 });
      expect(errorOf(tooLong)).toMatchObject({ code: 'validation_failed', message: expect.stringContaining('wait_seconds') });
      const noRun = await call(client, 'heartbeat', {});
      expect(errorOf(noRun).code).toBe('validation_failed');
      // What a tool leaves out of its operation is refused by name: read_events is JSON pages, never a lease.
      const sse = await call(client, 'read_events', { format: 'sse' });
      expect(errorOf(sse)).toMatchObject({ code: 'unknown_field', message: expect.stringContaining('format') });
      const action = await call(client, 'resume_run', { runId: '00000000-0000-4000-8000-000000000000', action: 'cancel' });
      expect(errorOf(action).code).toBe('unknown_field');
    });
  });

  it('refuses a wrong key and a missing one with 401, before any session', async () => {
    await expect(connect('awk_not_a_key_at_all')).rejects.toThrow(/401|unauthorized/i);
    const res = await rawPost(app, LIST_TOOLS, { key: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const body = (await res.json()) as { error: { code: string; requestId: string } };
    expect(body.error).toMatchObject({ code: 'unauthorized', requestId: res.headers.get('x-request-id') });
  });

  it('another workspace’s ids are 404, as over REST; a session belongs to the key that opened it', async () => {
    const theirs = await app.request('POST', '/decisions', {
      key: other.apiKey,
      body: { workspace_id: other.workspaceId, title: 'theirs' },
    });
    expect(theirs.status).toBe(201);
    const client = await connect();
    const read = await call(client, 'get_decision', { id: theirs.body.decision.id });
    expect(read._meta?.['aws/status']).toBe(404);
    expect(errorOf(read).code).toBe('not_found');
    await expect(client.readResource({ uri: `decision://${theirs.body.decision.id}` })).rejects.toThrow(/not found/i);
    const foreign = await call(client, 'request_decision', { workspace_id: other.workspaceId, title: 'in theirs' });
    expect(foreign.isError).toBe(true);

    // The session id of this client, presented with the other workspace's key: no such session.
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await rawPost(app, LIST_TOOLS, { key: other.apiKey, headers: inSession(sessionId) });
    expect(res.status).toBe(404);
  });

  it('one message a request: a batch is refused (the protocol has none since 2025-06-18; each call counts against the key)', async () => {
    const client = await connect();
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await rawPost(
      app,
      [
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_work', arguments: { title: 'batched 1' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_work', arguments: { title: 'batched 2' } } },
      ],
      { headers: inSession(sessionId) },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32600);
    const tasks = await app.request('GET', '/tasks?limit=100');
    expect((tasks.body.data as { title: string }[]).filter((t) => t.title.startsWith('batched'))).toEqual([]);
  });

  it('the transport: no GET stream (405), both media types accepted or 406, a known protocol version or 400, DELETE ends the session', async () => {
    const init = await rawPost(app, INITIALIZE);
    expect(init.status).toBe(200);
    const sessionId = init.headers.get('mcp-session-id')!;
    await init.text();
    const get = await fetch(new URL('/mcp', app.url), { headers: { Authorization: `Bearer ${app.ws.apiKey}`, ...inSession(sessionId) } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, DELETE');
    const jsonOnly = await rawPost(app, LIST_TOOLS, { headers: { ...inSession(sessionId), Accept: 'application/json' } });
    expect(jsonOnly.status).toBe(406);
    const oldVersion = await rawPost(app, LIST_TOOLS, { headers: { ...inSession(sessionId), 'Mcp-Protocol-Version': '1999-01-01' } });
    expect(oldVersion.status).toBe(400);
    const listed = await rawPost(app, LIST_TOOLS, { headers: inSession(sessionId) });
    expect(listed.status).toBe(200);
    // An answer's headers, written with it: the API's, the request id, the key's rate limit, the session.
    expect(listed.headers.get('content-type')).toBe('text/event-stream');
    expect(listed.headers.get('x-content-type-options')).toBe('nosniff');
    expect(listed.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(listed.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(listed.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
    expect(listed.headers.get('mcp-session-id')).toBe(sessionId);
    for (const refused of [get, jsonOnly, oldVersion]) expect(refused.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await listed.text()).toMatch(/^event: message\ndata: \{"jsonrpc":"2.0","id":\d+,"result":\{"tools":\[/);
    const again = await rawPost(app, INITIALIZE, { headers: inSession(sessionId) });
    expect(again.status).toBe(400);
    expect((await again.json()).error.code).toBe(-32600);
    const unknown = await rawPost(app, { jsonrpc: '2.0', id: 9, method: 'prompts/list' }, { headers: inSession(sessionId) });
    expect(await unknown.text()).toContain('"id":9,"error":{"code":-32601');
    const ended = await fetch(new URL('/mcp', app.url), {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${app.ws.apiKey}`, ...inSession(sessionId) },
    });
    expect(ended.status).toBe(200);
    expect((await rawPost(app, LIST_TOOLS, { headers: inSession(sessionId) })).status).toBe(404);
  });

  it('a wait with no progress asked for still writes a keepalive comment when it begins and every 10 s', { timeout: 30_000 }, async () => {
    const session = await rawSession(app);
    const call = await rawPost(app, waitRequest(2, 'Quiet wait', 11), { headers: session });
    // The decision moves three times during the wait (each move wakes it to read the decision
    // again): that is no reason to write a keepalive more often.
    const raised = async () =>
      ((await app.request('GET', '/decisions?limit=100')).body.data as { id: string; title: string }[]).find(
        (d) => d.title === 'Quiet wait',
      );
    let decision = await raised();
    while (!decision) {
      await new Promise((r) => setTimeout(r, 50));
      decision = await raised();
    }
    for (let i = 0; i < 3; i++) {
      expect((await app.request('POST', `/decisions/${decision.id}/attention`, { body: {} })).status).toBe(200);
    }
    const text = await call.text();
    // One when the wait begins and one 10 s on, before the answer the wait gives when it ends.
    expect(text.split(': keepalive\n\n').length - 1).toBe(2);
    expect(text.indexOf(': keepalive\n\n')).toBeLessThan(text.indexOf('"wait":{"ended":"wait_elapsed"'));
  });

  it('a body over the limit is 413 and a page of another origin 403, in the contract’s envelope', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(3 * 1024 * 1024) } });
    const res = await rawPost(app, big);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    const foreign = await rawPost(app, LIST_TOOLS, { headers: { Origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe('forbidden');
  });
});

describe('request_decision waits for the ruling', () => {
  it('answers the approval within a second of it, with progress on the way and the page offered', async () => {
    const client = await connect(app.ws.apiKey, { elicitation: { url: {} } });
    const offered: { mode?: string; url?: string; message?: string }[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      offered.push(request.params as { mode?: string; url?: string });
      return { action: 'accept' };
    });
    const progress: { progress: number; total?: number; message?: string }[] = [];
    const waiting = client.callTool(
      {
        name: 'request_decision',
        arguments: { title: 'Deploy to production?', wait_seconds: 30, idempotency_key: `deploy-${Date.now()}` },
      },
      undefined,
      { onprogress: (p) => progress.push(p), timeout: 60_000 },
    ) as Promise<CallToolResult>;
    // The decision is pending: find it as the approver's inbox would.
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      const list = await app.request('GET', '/decisions?status=pending&limit=100');
      id = (list.body.data as { id: string; title: string }[]).find((d) => d.title === 'Deploy to production?')?.id;
      if (!id) await new Promise((r) => setTimeout(r, 50));
    }
    expect(id).toBeDefined();
    await new Promise((r) => setTimeout(r, 500));
    const approved = await app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body: {} });
    expect(approved.status).toBe(200);
    const at = Date.now();
    const result = await waiting;
    expect(Date.now() - at).toBeLessThan(1000);
    expect(result.isError).toBe(false);
    const answer = result.structuredContent as {
      decision: { id: string; status: string; resolution: { outcome: string } };
      wait: { ended: string };
    };
    expect(answer.decision).toMatchObject({ id, status: 'approved', resolution: { outcome: 'approved' } });
    expect(answer.wait.ended).toBe('ruled');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toMatchObject({ total: 30, message: expect.stringContaining(`/decisions/${id}`) });
    expect(offered).toEqual([expect.objectContaining({ mode: 'url', url: expect.stringMatching(new RegExp(`/decisions/${id}$`)) })]);
  });

  it('a wait that ends answers the decision still pending; the same key waits on the same decision', async () => {
    const client = await connect();
    const args = { title: 'Nobody answers', wait_seconds: 1, idempotency_key: `quiet-${Date.now()}` };
    const first = await call(client, 'request_decision', args);
    const answer = first.structuredContent as { decision: { id: string; status: string }; wait: { ended: string; waited_ms: number } };
    expect(answer.decision.status).toBe('pending');
    expect(answer.wait.ended).toBe('wait_elapsed');
    expect(answer.wait.waited_ms).toBeGreaterThanOrEqual(1000);
    const length = await ledgerLength();
    const again = await call(client, 'request_decision', args);
    expect((again.structuredContent as { decision: { id: string } }).decision.id).toBe(answer.decision.id);
    expect(await ledgerLength()).toBe(length);
    // Declined meanwhile: a wait that starts after the ruling answers at once.
    const declined = await app.request('POST', `/decisions/${answer.decision.id}/decline`, { session: approver.session, body: {} });
    expect(declined.status).toBe(200);
    const late = await call(client, 'request_decision', { ...args, wait_seconds: 30 });
    expect((late.structuredContent as { decision: { status: string }; wait: { ended: string } }).decision.status).toBe('declined');
  });
});

describe('resources', () => {
  it('ledger://checkpoint and decision://{id} read as their REST operations answer', async () => {
    const client = await connect();
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['ledger://checkpoint']);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate)).toEqual(['decision://{id}']);

    // Before the integrator has signed one: not found, as GET /ledger/checkpoint answers.
    await expect(client.readResource({ uri: 'ledger://checkpoint' })).rejects.toThrow(/not found/i);
    await call(client, 'create_work', { title: 'so the ledger has a checkpoint' });
    await integrateWorkspace(app.runtime.db, app.ws.workspaceId, signingOf(app.runtime));
    const rest = await app.request('GET', '/ledger/checkpoint');
    const read = await client.readResource({ uri: 'ledger://checkpoint' });
    const checkpoint = JSON.parse(String((read.contents[0] as { text: string }).text)) as unknown;
    expect(rest.status).toBe(200);
    expect(checkpoint).toEqual(rest.body);

    const raised = await call(client, 'request_decision', { title: 'Read me' });
    const id = (raised.structuredContent as { decision: { id: string } }).decision.id;
    const decision = await client.readResource({ uri: `decision://${id}` });
    expect(JSON.parse(String((decision.contents[0] as { text: string }).text))).toMatchObject({ decision: { id, status: 'pending' } });
  });
});

describe('a wait holds a place among the key’s leases', () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await startTestApp({ SSE_LEASES_PER_KEY: '1' }, { primaryName: 'one-lease' });
  });
  afterAll(async () => {
    await small?.close();
  });

  it('past the limit a wait is 429 and raises nothing; a client that hangs up frees its place at once', async () => {
    // A wait over a raw connection, which the client then drops.
    const session = await rawSession(small);
    await (await rawPost(small, { jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: session })).text();
    const hangUp = new AbortController();
    const waiting = await rawPost(small, waitRequest(2, 'Held', 60), { headers: session, signal: hangUp.signal });
    expect(waiting.status).toBe(200);

    // The key's one place is taken: another wait is refused, and raises nothing.
    const client = await connect(small.ws.apiKey, {}, small);
    try {
      await expect.poll(async () => (await small.request('GET', '/decisions?status=pending')).body.data.length, { timeout: 5_000 }).toBe(1);
      await small.expectUnchanged(async () => {
        const refused = (await client.callTool({
          name: 'request_decision',
          arguments: { title: 'Second', wait_seconds: 5 },
        })) as CallToolResult;
        expect(errorOf(refused)).toMatchObject({ code: 'rate_limited' });
        expect(refused._meta?.['aws/status']).toBe(429);
      });

      // The first client hangs up: its wait ends and its place is free again.
      hangUp.abort();
      await expect
        .poll(
          async () => {
            const r = (await client.callTool({
              name: 'request_decision',
              arguments: { title: 'Third', wait_seconds: 1 },
            })) as CallToolResult;
            return (r.structuredContent as { wait?: { ended: string } }).wait?.ended ?? errorOf(r).code;
          },
          { timeout: 5_000 },
        )
        .toBe('wait_elapsed');
    } finally {
      await client.close();
    }
  });
  it('a client that cancels a wait (notifications/cancelled) gets no response, and its place is free at once', async () => {
    const session = await rawSession(small);
    const waiting = await rawPost(small, waitRequest(7, 'Called off', 60), { headers: session });
    expect(waiting.status).toBe(200);
    await expect
      .poll(async () => (await small.request('GET', '/decisions?status=pending')).body.data.length, { timeout: 5_000 })
      .toBeGreaterThan(0);
    const cancelled = await rawPost(
      small,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'not needed' } },
      { headers: session },
    );
    expect(cancelled.status).toBe(202);
    // The stream ends without the request's response (the protocol's rule for a cancelled request).
    const text = await waiting.text();
    expect(text).not.toContain('"id":7');
    const client = await connect(small.ws.apiKey, {}, small);
    try {
      const next = (await call(client, 'request_decision', { title: 'After', wait_seconds: 1 })) as CallToolResult;
      expect((next.structuredContent as { wait?: { ended: string } }).wait?.ended).toBe('wait_elapsed');
    } finally {
      await client.close();
    }
  });
});

describe('waiters past the memory the instance allows', () => {
  let full: TestApp;
  beforeAll(async () => {
    // 1 %: the heap is always past it, as a heap near its cap is.
    full = await startTestApp({ WAITERS_HEAP_PERCENT: '1' }, { primaryName: 'full-heap' });
  });
  afterAll(async () => {
    await full?.close();
  });

  it('a new lease, MCP session or wait is 503 with Retry-After and raises nothing; ordinary calls go on', async () => {
    await full.expectUnchanged(async () => {
      const lease = await full.request('GET', '/events/stream?format=sse&lease_ms=1000');
      expect(lease.status).toBe(503);
      expect(lease.headers.get('retry-after')).toBe('5');
      expect(lease.body.error).toMatchObject({ code: 'service_unavailable', details: { scope: 'waiters' } });

      const init = await rawPost(full, INITIALIZE);
      expect(init.status).toBe(503);
      expect(init.headers.get('retry-after')).toBe('5');
      expect(((await init.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
    });
    // A JSON page of the same events is served as ever.
    expect((await full.request('GET', '/events/stream?limit=1')).status).toBe(200);
  });
});

describe('sessions a key may hold', () => {
  let one: TestApp;
  beforeAll(async () => {
    one = await startTestApp({ MCP_SESSIONS_PER_KEY: '1' }, { primaryName: 'one-session' });
  });
  afterAll(async () => {
    await one?.close();
  });

  it('one more than MCP_SESSIONS_PER_KEY is 429; ending one makes room', async () => {
    const open = () => {
      const client = new Client({ name: 'cap', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', one.url), {
        requestInit: { headers: { Authorization: `Bearer ${one.ws.apiKey}` } },
      });
      return { client, transport, connected: client.connect(transport) };
    };
    const first = open();
    await first.connected;
    const second = open();
    await expect(second.connected).rejects.toThrow(/429|rate_limited|MCP sessions/);
    await first.transport.terminateSession();
    await first.client.close();
    const third = open();
    await third.connected;
    await third.client.close();
  });
});

describe('the service stopping', () => {
  it('a wait under way answers the decision as it stands, ended service_stopping, before the database closes', async () => {
    const stopping = await startTestApp({}, { primaryName: 'stopping' });
    let closed = false;
    try {
      const client = await connect(stopping.ws.apiKey, {}, stopping);
      const waiting = call(client, 'request_decision', { title: 'Asked just before a stop', wait_seconds: 60 });
      await expect
        .poll(async () => (await stopping.request('GET', '/decisions?status=pending')).body.data.length, { timeout: 5_000 })
        .toBe(1);
      const close = stopping.close();
      closed = true;
      const result = await waiting;
      expect(result.isError).toBeFalsy();
      const body = result.structuredContent as { decision: { status: string }; wait: { ended: string } };
      expect(body.wait.ended).toBe('service_stopping');
      expect(body.decision.status).toBe('pending');
      await close;
    } finally {
      if (!closed) await stopping.close();
    }
  });
});
