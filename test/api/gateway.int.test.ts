/**
 * The MCP gateway end to end over real sockets: an agent (the SDK's client) calls the tools of a
 * real upstream MCP server (the SDK's server, recording what it receives) through /mcp, and the
 * server's guards decide: an allowed call is sent once, a denied one never, an asked one waits for
 * a human's ruling made over REST and is sent with the arguments as approved, once. The ledger's
 * tool_call.* events carry the digests of exactly what the upstream received and what came back,
 * and nothing secret.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { digestOf } from '@/server/ledger/canonical';
import { BANK_GUARDS, BANK_TOOLS, startUpstream, type Upstream } from '../support/upstream-mcp';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { registerServer } from '../support/gateway';

const UPSTREAM_TOKEN = 'Bearer upstream-credential-never-shown';

let app: TestApp;
let approver: TestMember;
let upstream: Upstream;
const clients: Client[] = [];

beforeAll(async () => {
  app = await startTestApp({ MCP_UPSTREAM_ALLOW_HOSTS: '127.0.0.1' });
  approver = await app.member('approver');
  upstream = await startUpstream(
    {
      ...BANK_TOOLS,
      big: { run: () => ({ content: [{ type: 'text', text: 'x'.repeat(10 * 1024 * 1024) }] }) },
      slow: { run: () => new Promise((resolve) => setTimeout(() => resolve({ content: [{ type: 'text', text: 'late' }] }), 4_000)) },
    },
    { requireHeaders: { authorization: UPSTREAM_TOKEN } },
  );
  await registerServer(app, {
    name: 'bank',
    url: upstream.url,
    headers: { Authorization: UPSTREAM_TOKEN },
    guards: [...BANK_GUARDS, { tool: 'big', mode: 'allow' }, { tool: 'slow', mode: 'allow' }],
    default_mode: 'ask',
    timeout_ms: 1_500,
  });
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await app?.close();
  await upstream?.close();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'gateway-int-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', app.url), { requestInit: { headers: { Authorization: `Bearer ${app.ws.apiKey}` } } }),
  );
  clients.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>, opts: { signal?: AbortSignal } = {}) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 120_000, ...opts }) as Promise<CallToolResult>;

const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;

interface Event {
  eventType: string;
  aggregateId: string;
  payload: Record<string, unknown>;
}

/**
 * The workspace's tool_call.* events, oldest first, once every call sent has its answer recorded
 * (the gateway records an answer just after giving it to the agent).
 */
async function toolCallEvents(): Promise<Event[]> {
  await expect
    .poll(async () =>
      (await app.request('GET', '/tool-calls?limit=100')).body.data.filter((c: { status: string }) => c.status === 'forwarded'),
    )
    .toEqual([]);
  const res = await app.request('GET', '/events/stream?type=tool_call.forwarded&type=tool_call.returned&type=tool_call.refused&limit=100');
  expect(res.status, res.text).toBe(200);
  return res.body.data as Event[];
}

/** The pending decision the gateway raised for `tool` with `args`, as an approver's inbox finds it. */
async function pendingDecision(tool: string, args: Record<string, unknown>): Promise<string> {
  const digest = digestOf({ tool, arguments: args });
  for (let i = 0; i < 200; i++) {
    const list = await app.request('GET', '/decisions?status=pending&limit=100');
    const found = (list.body.data as { id: string; action_digest: string | null }[]).find((d) => d.action_digest === digest);
    if (found) return found.id;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no pending decision for ${tool}`);
}

describe('the upstream tools at /mcp', () => {
  it('lists them beside the service’s own, as <server>__<tool>, with the upstream’s input schema', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['create_work', 'bank__echo', 'bank__transfer', 'bank__wipe']));
    const transfer = tools.find((t) => t.name === 'bank__transfer')!;
    expect(transfer.inputSchema).toMatchObject({ required: ['to', 'amount'] });
    expect(transfer.description).toContain('Moves money.');
  });

  it('an unknown tool is the protocol’s invalid-params error, and records nothing', async () => {
    const client = await connect();
    const before = (await toolCallEvents()).length;
    await expect(call(client, 'bank__nope', {})).rejects.toThrow(/No tool named bank__nope/);
    await expect(call(client, 'elsewhere__echo', {})).rejects.toThrow(/No tool named/);
    expect((await toolCallEvents()).length).toBe(before);
  });
});

describe('an upstream whose tools change', () => {
  it('says so (notifications/tools/list_changed) once the gateway has called it: the tool is listed and callable, the change recorded', async () => {
    const client = await connect();
    expect((await call(client, 'bank__echo', { text: 'wake' })).isError).toBeFalsy();
    await upstream.setTool('refund', { description: 'Gives money back.' });
    await expect.poll(async () => (await client.listTools()).tools.map((t) => t.name), { timeout: 10_000 }).toContain('bank__refund');
    const changed = await app.request('GET', '/events/stream?type=mcp_server.tools_changed&limit=10');
    expect(changed.body.data.at(-1).payload).toMatchObject({ name: 'bank', added: ['refund'] });
    expect(changed.body.data.at(-1).actorId).toBe('system:mcp-gateway');
    // A new tool no guard names takes the default mode: ask.
    const asked = call(client, 'bank__refund', { to: 'dave' });
    const id = await pendingDecision('bank.refund', { to: 'dave' });
    expect((await app.request('POST', `/decisions/${id}/decline`, { session: approver.session, body: {} })).status).toBe(200);
    expect((await asked).isError).toBe(true);
  });
});

describe('guards', () => {
  it('allow: the call is sent once, with the upstream’s credential, and its digests are recorded', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const args = { text: 'hello' };
    const result = await call(client, 'bank__echo', args);
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(JSON.stringify(args));
    const received = upstream.calls.slice(before);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ tool: 'echo', arguments: args });
    expect(received[0]!.headers.authorization).toBe(UPSTREAM_TOKEN);

    const events = await toolCallEvents();
    const forwarded = events.filter((e) => e.eventType === 'tool_call.forwarded').at(-1)!;
    expect(forwarded.payload).toMatchObject({
      server: 'bank',
      tool: 'echo',
      mode: 'allow',
      arguments_digest: digestOf(received[0]!.arguments),
      key_id: app.ws.apiKeyId,
      decision_id: null,
      grant_id: null,
    });
    const returned = events.find((e) => e.eventType === 'tool_call.returned' && e.aggregateId === forwarded.aggregateId)!;
    expect(returned.payload).toMatchObject({ is_error: false, result_digest: digestOf(result) });
    expect(JSON.stringify(events)).not.toContain('upstream-credential');
  });

  it('a guard changed since the gateway last read the server takes effect at the next call', async () => {
    const client = await connect();
    expect((await call(client, 'bank__echo', { text: 'allowed' })).isError).toBeFalsy();
    const list = await app.request('GET', '/mcp-servers');
    const bank = (list.body.data as { id: string; name: string; guards: unknown[] }[]).find((s) => s.name === 'bank')!;
    const guards = bank.guards;
    expect(
      (await app.request('PATCH', `/mcp-servers/${bank.id}`, { body: { guards: [{ tool: 'echo', mode: 'deny' }, ...guards] } })).status,
    ).toBe(200);
    try {
      const before = upstream.calls.length;
      const refused = await call(client, 'bank__echo', { text: 'denied now' });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/refused by guard #1 \(tool "echo", deny\)/);
      expect(upstream.calls.length).toBe(before);
    } finally {
      expect((await app.request('PATCH', `/mcp-servers/${bank.id}`, { body: { guards } })).status).toBe(200);
    }
    expect((await call(client, 'bank__echo', { text: 'allowed again' })).isError).toBeFalsy();
  });

  it('deny: refused without reaching the upstream, the guard named', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const result = await call(client, 'bank__wipe', { all: true });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/refused by guard #2 \(tool "wipe", deny\)/);
    expect(upstream.calls.length).toBe(before);
    const refused = (await toolCallEvents()).filter((e) => e.eventType === 'tool_call.refused').at(-1)!;
    expect(refused.payload).toMatchObject({ tool: 'wipe', mode: 'deny', reason: 'denied', arguments_digest: digestOf({ all: true }) });
  });
});

describe('ask: a human rules, the gateway runs what was approved', () => {
  it('approved with edited arguments: the upstream receives exactly the edited ones, once, and the grant names them', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const asked = { to: 'bob', amount: 100 };
    const progress: { message?: string }[] = [];
    const waiting = client.callTool({ name: 'bank__transfer', arguments: asked }, undefined, {
      timeout: 120_000,
      onprogress: (p) => progress.push(p),
    }) as Promise<CallToolResult>;
    const id = await pendingDecision('bank.transfer', asked);
    // It says where the human rules while it waits (again every 10 s).
    await expect.poll(() => progress[0]?.message).toContain(`/decisions/${id}`);
    const decision = await app.request('GET', `/decisions/${id}`);
    expect(decision.body.decision).toMatchObject({
      title: 'transfer on bank',
      editable: true,
      action: { tool: 'bank.transfer', arguments: asked },
    });
    expect(upstream.calls.length).toBe(before);

    const edited = { to: 'bob', amount: 50 };
    const approved = await app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body: { arguments: edited } });
    expect(approved.status).toBe(200);
    const result = await waiting;
    expect(result.isError).toBeFalsy();
    const received = upstream.calls.slice(before);
    expect(received).toEqual([expect.objectContaining({ tool: 'transfer', arguments: edited })]);

    const after = await app.request('GET', `/decisions/${id}`);
    const grant = after.body.decision.grant as { id: string; action_digest: string; consumed_at: string | null };
    expect(grant.action_digest).toBe(digestOf({ tool: 'bank.transfer', arguments: received[0]!.arguments }));
    expect(grant.consumed_at).not.toBeNull();
    expect(after.body.decision.gateway).toEqual({ server_id: expect.any(String), server: 'bank', tool: 'transfer' });
    // Whether and when it ran, and with what answer, as the decision page reads it.
    await toolCallEvents();
    const calls = await app.request('GET', `/tool-calls?decision_id=${id}`);
    expect(calls.status).toBe(200);
    expect(calls.body.data).toEqual([
      expect.objectContaining({
        status: 'returned',
        decision_id: id,
        grant_id: grant.id,
        arguments_digest: digestOf(received[0]!.arguments),
        result_digest: digestOf(result),
        is_error: false,
        returned_at: expect.any(String),
      }),
    ]);
    const forwarded = (await toolCallEvents()).filter((e) => e.eventType === 'tool_call.forwarded').at(-1)!;
    expect(forwarded.payload).toMatchObject({
      tool: 'transfer',
      mode: 'ask',
      decision_id: id,
      grant_id: grant.id,
      arguments_digest: digestOf(received[0]!.arguments),
    });
  });

  it('declined: the upstream is never called, and the agent reads the approver’s note', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const asked = { to: 'mallory', amount: 1_000_000 };
    const waiting = call(client, 'bank__transfer', asked);
    const id = await pendingDecision('bank.transfer', asked);
    const declined = await app.request('POST', `/decisions/${id}/decline`, {
      session: approver.session,
      body: { note: 'Not to Mallory.' },
    });
    expect(declined.status).toBe(200);
    const result = await waiting;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/was declined.*not called.*Not to Mallory\./);
    expect(upstream.calls.length).toBe(before);
    const refused = (await toolCallEvents()).filter((e) => e.eventType === 'tool_call.refused').at(-1)!;
    expect(refused.payload).toMatchObject({ decision_id: id, reason: 'declined', arguments_digest: digestOf(asked) });
  });

  it('a client that hangs up and calls again joins the same decision; approved, the call runs once', async () => {
    const first = await connect();
    const before = upstream.calls.length;
    const asked = { to: 'carol', amount: 7 };
    const hangUp = new AbortController();
    const abandoned = call(first, 'bank__transfer', asked, { signal: hangUp.signal }).catch((err: unknown) => err);
    const id = await pendingDecision('bank.transfer', asked);
    hangUp.abort();
    await abandoned;

    const again = await connect();
    const retried = call(again, 'bank__transfer', asked);
    const twice = call(again, 'bank__transfer', asked);
    await new Promise((r) => setTimeout(r, 300));
    const pending = await app.request('GET', '/decisions?status=pending&limit=100');
    const same = (pending.body.data as { action_digest: string }[]).filter(
      (d) => d.action_digest === digestOf({ tool: 'bank.transfer', arguments: asked }),
    );
    expect(same).toHaveLength(1);

    expect((await app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body: {} })).status).toBe(200);
    const [a, b] = await Promise.all([retried, twice]);
    expect(a.isError).toBeFalsy();
    expect(b).toEqual(a);
    expect(upstream.calls.slice(before)).toEqual([expect.objectContaining({ tool: 'transfer', arguments: asked })]);
  });
});

describe('calls made under a run', () => {
  it('name it in _meta.run_id: the task’s receipt lists them by digest, and the public validator accepts it', async () => {
    const client = await connect();
    const work = await app.request('POST', '/work', { body: { title: 'Pay the supplier' } });
    const run = await app.request('POST', '/runs', { body: { task_id: work.body.data.taskId, agent_id: 'payer' } });
    const runId = run.body.data.runId as string;
    const args = { text: 'under a run' };
    const result = (await client.callTool({ name: 'bank__echo', arguments: args, _meta: { run_id: runId } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    const denied = (await client.callTool({ name: 'bank__wipe', arguments: {}, _meta: { run_id: runId } })) as CallToolResult;
    expect(denied.isError).toBe(true);

    await toolCallEvents();
    const calls = await app.request('GET', `/tool-calls?run_id=${runId}`);
    expect(calls.body.data.map((c: { tool: string }) => c.tool)).toEqual(['wipe', 'echo']);
    const receipt = await app.request('GET', `/receipts/${work.body.data.receiptId}`);
    expect(receipt.status).toBe(200);
    const document = receipt.body;
    expect(document.tool_calls).toEqual([
      expect.objectContaining({
        run_id: runId,
        tool: 'echo',
        mode: 'allow',
        status: 'returned',
        arguments_digest: digestOf(args),
        result_digest: digestOf(result),
      }),
      expect.objectContaining({ run_id: runId, tool: 'wipe', mode: 'deny', status: 'refused', reason: 'denied', result_digest: null }),
    ]);
    const validated = await app.request('POST', '/agent-work-receipts/validate', { key: null, body: document });
    expect(validated.body).toMatchObject({ valid: true, issues: [] });
  });
});

describe('hostile calls', () => {
  it('arguments too large to put to an approver are refused before any decision is raised; nothing is written', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const counts = await app.counts();
    const result = await call(client, 'bank__transfer', { to: 'bob', amount: 1, memo: 'x'.repeat(70_000) });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/cannot be put to one.*65,?536|cannot be put to one/);
    expect(upstream.calls.length).toBe(before);
    expect(await app.counts()).toEqual(counts);
  });

  it('arguments over the endpoint’s body limit are 413 before any guard is read: nothing sent, nothing written', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const counts = await app.counts();
    await expect(call(client, 'bank__echo', { text: 'x'.repeat(3 * 1024 * 1024) })).rejects.toThrow(/413|payload_too_large/);
    expect(upstream.calls.length).toBe(before);
    expect(await app.counts()).toEqual(counts);
  });

  it('text no store can keep (a NUL) in an asked call’s arguments is refused before a decision is raised', async () => {
    const client = await connect();
    const counts = await app.counts();
    const result = await call(client, 'bank__transfer', { to: 'bob\u0000', amount: 1 });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/cannot be put to one/);
    expect(await app.counts()).toEqual(counts);
  });

  it('_meta.run_id that names no run of the workspace is refused, and nothing is sent', async () => {
    const client = await connect();
    const before = upstream.calls.length;
    const result = (await client.callTool({
      name: 'bank__echo',
      arguments: { text: 'x' },
      _meta: { run_id: '00000000-0000-4000-8000-000000000000' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/_meta\.run_id names no run/);
    expect(upstream.calls.length).toBe(before);
  });
});

describe('an upstream that misbehaves', () => {
  it('an answer of 10 MB, a slow one and garbage are each a clear tool error, recorded as returned with isError; the service goes on', async () => {
    const client = await connect();
    const big = await call(client, 'bank__big', {});
    expect(big.isError).toBe(true);
    expect(textOf(big)).toMatch(/answered more than \d+ bytes/);
    const slow = await call(client, 'bank__slow', {});
    expect(slow.isError).toBe(true);
    expect(textOf(slow)).toMatch(/did not answer within 1500 ms/);
    upstream.behave('garbage');
    try {
      const garbled = await call(client, 'bank__echo', { text: 'x' });
      expect(garbled.isError).toBe(true);
      expect(textOf(garbled)).toMatch(/failed: The MCP server at 127\.0\.0\.1:\d+/);
    } finally {
      upstream.behave('ok');
    }
    const returned = (await toolCallEvents()).filter((e) => e.eventType === 'tool_call.returned').slice(-3);
    expect(returned.map((e) => e.payload.is_error)).toEqual([true, true, true]);
    expect(returned.map((e) => e.payload.result_digest)).toEqual([null, null, null]);
    // Still healthy: the next call goes through.
    const ok = await call(client, 'bank__echo', { text: 'after' });
    expect(ok.isError).toBeFalsy();
    expect((await app.request('GET', '/ledger/verify')).body.data.verified).toBe(true);
  });
});
