/**
 * Upstream MCP servers over REST (POST/GET/PATCH/DELETE /mcp-servers, refresh), against real SDK
 * upstreams on 127.0.0.1 (allowed by MCP_UPSTREAM_ALLOW_HOSTS): registration lists the tools with
 * their schema digests; the headers reach the upstream and nothing else (no answer, event or log
 * line); each change is its ledger event with only what changed; a refresh records what the
 * upstream added, removed or changed, and nothing when nothing did; the gateway's own refresh acts
 * as the system. Hostile input, an upstream that is down or answers garbage, and a loopback URL
 * without the operator's allow list are refused with nothing written; only owners and keys write.
 */
import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpServers } from '@/db/schema';
import { MAX_SERVERS_PER_WORKSPACE } from '@/server/domain/mcp-servers/servers';
import { refreshServerTools } from '@/server/gateway/refresh';
import { digestOf } from '@/server/ledger/canonical';
import { startTestApp, type ApiResponse, type TestApp, type TestWorkspace } from '../support/app';
import { capturedLogLines } from '../support/log-capture';
import { freePort } from '../support/postgres-server';
import { startUpstream, type Upstream } from '../support/upstream-mcp';

const SECRET = 'Bearer upstream-secret-7f3a9c1e';
const BALANCE_SCHEMA = { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] };
const TRANSFER_SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string' }, amount: { type: 'number', minimum: 0 } },
  required: ['to', 'amount'],
};

let app: TestApp;
let bank: Upstream;
let open: Upstream;

beforeAll(async () => {
  [app, bank, open] = await Promise.all([
    startTestApp({ MCP_UPSTREAM_ALLOW_HOSTS: '127.0.0.1', RATE_LIMIT_API_PER_MIN: '100000' }),
    startUpstream(
      {
        get_balance: { description: 'The balance of an account.', inputSchema: BALANCE_SCHEMA },
        transfer: { description: 'Moves money.', inputSchema: TRANSFER_SCHEMA },
      },
      { requireHeaders: { authorization: SECRET } },
    ),
    startUpstream({ echo: {} }),
  ]);
});
afterAll(async () => {
  await Promise.all([app?.close(), bank?.close(), open?.close()]);
});

/** The digest events record of a URL: SHA-256 of the URL as written. */
const digestOfUrl = (url: string) => `sha256:${createHash('sha256').update(url).digest('hex')}`;

/** The events of `types` in the workspace, oldest first. */
async function eventsOf(ws: TestWorkspace, ...types: string[]) {
  const query = types.map((t) => `type=${t}`).join('&');
  const res = await app.request('GET', `/events/stream?${query}&limit=100`, { key: ws.apiKey });
  expect(res.status, res.text).toBe(200);
  return { text: res.text, events: res.body.data as { eventType: string; actorType: string; actorId: string; payload: any }[] };
}

const mcpEvents = (ws: TestWorkspace) =>
  eventsOf(ws, 'mcp_server.registered', 'mcp_server.updated', 'mcp_server.removed', 'mcp_server.tools_changed');

async function register(ws: TestWorkspace, body: Record<string, unknown>) {
  const res = await app.request('POST', '/mcp-servers', { key: ws.apiKey, body });
  expect(res.status, res.text).toBe(201);
  return res.body.data as Record<string, any>;
}

/** Every error answer carries the contract's envelope. */
function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body.error).toMatchObject({ code, message: expect.any(String), requestId: res.headers.get('x-request-id') });
  expect(res.body.error.message.length).toBeGreaterThan(10);
  return res.body.error as { message: string; details: Record<string, any> };
}

describe('registering a server', () => {
  it('lists its tools with their schema digests, sends the headers to it, and shows them to nobody', async () => {
    const ws = await app.createWorkspace();
    const before = bank.requests.length;
    const res = await app.request('POST', '/mcp-servers', {
      key: ws.apiKey,
      body: {
        name: 'bank',
        url: bank.url,
        headers: { Authorization: SECRET },
        guards: [
          { tool: 'get_*', mode: 'allow' },
          { tool: 'transfer', mode: 'ask', urgency: 'critical', require_passkey: true, editable: false },
        ],
        default_mode: 'deny',
        timeout_ms: 5000,
      },
    });
    expect(res.status, res.text).toBe(201);
    const server = res.body.data;
    expect(res.headers.get('etag')).toBe('"1"');
    expect(server).toEqual({
      id: expect.any(String),
      workspace_id: ws.workspaceId,
      name: 'bank',
      url: bank.url,
      header_names: ['authorization'],
      guards: [
        { tool: 'get_*', mode: 'allow' },
        { tool: 'transfer', mode: 'ask', urgency: 'critical', require_passkey: true, editable: false },
      ],
      default_mode: 'deny',
      timeout_ms: 5000,
      tools: [
        {
          name: 'get_balance',
          description: 'The balance of an account.',
          input_schema: BALANCE_SCHEMA,
          schema_digest: digestOf(BALANCE_SCHEMA),
          mode: 'allow',
          guard_index: 0,
        },
        {
          name: 'transfer',
          description: 'Moves money.',
          input_schema: TRANSFER_SCHEMA,
          schema_digest: digestOf(TRANSFER_SCHEMA),
          mode: 'ask',
          guard_index: 1,
        },
      ],
      tools_listed_at: expect.stringMatching(/Z$/),
      last_error: null,
      aggregateVersion: 1,
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    // The upstream was asked with the header (it answers 401 without it).
    const received = bank.requests.slice(before);
    expect(received.length).toBeGreaterThan(0);
    expect(received.every((r) => r.headers.authorization === SECRET)).toBe(true);

    const { events, text } = await mcpEvents(ws);
    expect(events.map((e) => [e.eventType, e.payload])).toEqual([
      [
        'mcp_server.registered',
        {
          id: server.id,
          name: 'bank',
          target: { scheme: 'http', host: '127.0.0.1', port: Number(new URL(bank.url).port), url_digest: digestOfUrl(bank.url) },
          header_names: ['authorization'],
          guards: server.guards,
          default_mode: 'deny',
          timeout_ms: 5000,
          tools: [
            { name: 'get_balance', schema_digest: digestOf(BALANCE_SCHEMA) },
            { name: 'transfer', schema_digest: digestOf(TRANSFER_SCHEMA) },
          ],
        },
      ],
    ]);
    expect(text).not.toContain('upstream-secret');
    expect(text).not.toContain(bank.url);

    const one = await app.request('GET', `/mcp-servers/${server.id}`, { key: ws.apiKey });
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(server);
    expect(one.headers.get('etag')).toBe('"1"');
    const list = await app.request('GET', '/mcp-servers', { key: ws.apiKey });
    expect(list.body.data).toEqual([server]);
    expect(list.body.meta).toMatchObject({ hasMore: false, nextCursor: null });
    for (const answer of [res, one, list]) expect(answer.text).not.toContain('upstream-secret');

    // Sealed at rest: the row holds the names and a cipher text, not the value.
    const [row] = await app.runtime.db.select().from(mcpServers).where(eq(mcpServers.id, server.id));
    expect(row!.headerNames).toEqual(['authorization']);
    expect(row!.headersCipher).toMatch(/^v1\./);
    expect(row!.headersCipher).not.toContain('upstream-secret');
    expect(JSON.stringify(capturedLogLines())).not.toContain('upstream-secret');
  });

  it('defaults to ask for every tool, 60 s, no headers; policies are stored resolved', async () => {
    const ws = await app.createWorkspace();
    const approver = await app.member('approver', ws.workspaceId);
    const server = await register(ws, {
      name: 'open',
      url: open.url,
      guards: [{ tool: 'echo', mode: 'ask', policy: { approvers: { user_ids: [approver.userId] } } }],
    });
    expect(server).toMatchObject({ header_names: [], default_mode: 'ask', timeout_ms: 60_000 });
    expect(server.guards).toEqual([
      {
        tool: 'echo',
        mode: 'ask',
        policy: {
          veto: true,
          stages: [{ name: 'approval', approvals_required: 1, approvers: { roles: [], user_ids: [approver.userId] } }],
          escalation: [],
        },
      },
    ]);
    expect(server.tools).toEqual([expect.objectContaining({ name: 'echo', mode: 'ask', guard_index: 0 })]);
    const bare = await register(ws, { name: 'open-2', url: open.url });
    expect(bare.tools).toEqual([expect.objectContaining({ name: 'echo', mode: 'ask', guard_index: null })]);
  });
});

describe('changing a server', () => {
  it('records only what changed; a patch that changes nothing writes nothing; If-Match guards it', async () => {
    const ws = await app.createWorkspace();
    const server = await register(ws, { name: 'bank', url: bank.url, headers: { authorization: SECRET } });
    expect(server.tools.map((t: { mode: string }) => t.mode)).toEqual(['ask', 'ask']);

    const patched = await app.request('PATCH', `/mcp-servers/${server.id}`, {
      key: ws.apiKey,
      body: { guards: [{ tool: 'get_balance', mode: 'allow' }], timeout_ms: 2000 },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.headers.get('etag')).toBe('"2"');
    expect(patched.body.data).toMatchObject({ aggregateVersion: 2, timeout_ms: 2000, guards: [{ tool: 'get_balance', mode: 'allow' }] });
    expect(
      patched.body.data.tools.map((t: { name: string; mode: string; guard_index: number | null }) => [t.name, t.mode, t.guard_index]),
    ).toEqual([
      ['get_balance', 'allow', 0],
      ['transfer', 'ask', null],
    ]);
    // Guards, mode and timeout ask nothing of the upstream.
    const asked = bank.requests.length;

    await app.expectUnchanged(async () => {
      const same = await app.request('PATCH', `/mcp-servers/${server.id}`, {
        key: ws.apiKey,
        body: { guards: [{ tool: 'get_balance', mode: 'allow' }], timeout_ms: 2000, name: 'bank', headers: { Authorization: SECRET } },
      });
      expect(same.status, same.text).toBe(200);
      expect(same.body.data.aggregateVersion).toBe(2);
      const stale = await app.request('PATCH', `/mcp-servers/${server.id}`, {
        key: ws.apiKey,
        headers: { 'if-match': '"1"' },
        body: { default_mode: 'deny' },
      });
      expect(expectError(stale, 412, 'precondition_failed').details).toEqual({ version: 2 });
    });
    expect(bank.requests.length).toBe(asked);

    const { events } = await mcpEvents(ws);
    expect(events.map((e) => [e.eventType, e.payload])).toEqual([
      ['mcp_server.registered', expect.any(Object)],
      ['mcp_server.updated', { id: server.id, guards: [{ tool: 'get_balance', mode: 'allow' }], timeout_ms: 2000 }],
    ]);
  });

  it('lists the server again at a new URL (mcp_server.updated with the target, tools_changed with the difference)', async () => {
    const ws = await app.createWorkspace();
    const server = await register(ws, { name: 'moving', url: open.url });
    const elsewhere = await startUpstream({ echo: {}, other: { inputSchema: BALANCE_SCHEMA } });
    try {
      const moved = await app.request('PATCH', `/mcp-servers/${server.id}`, {
        key: ws.apiKey,
        body: { url: elsewhere.url, name: 'moved' },
      });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.data).toMatchObject({ name: 'moved', url: elsewhere.url, aggregateVersion: 3 });
      expect(moved.body.data.tools.map((t: { name: string }) => t.name)).toEqual(['echo', 'other']);
      expect(elsewhere.requests.length).toBeGreaterThan(0);
      const { events } = await mcpEvents(ws);
      expect(events.slice(1).map((e) => [e.eventType, e.payload])).toEqual([
        [
          'mcp_server.updated',
          {
            id: server.id,
            name: 'moved',
            target: {
              scheme: 'http',
              host: '127.0.0.1',
              port: Number(new URL(elsewhere.url).port),
              url_digest: digestOfUrl(elsewhere.url),
            },
          },
        ],
        [
          'mcp_server.tools_changed',
          {
            id: server.id,
            name: 'moved',
            tools: [
              { name: 'echo', schema_digest: server.tools[0].schema_digest },
              { name: 'other', schema_digest: digestOf(BALANCE_SCHEMA) },
            ],
            added: ['other'],
            removed: [],
            changed: [],
          },
        ],
      ]);
    } finally {
      await elsewhere.close();
    }
  });

  it('replaces the headers (tried on the upstream first) and removes them with null, never recording a value', async () => {
    const ws = await app.createWorkspace();
    const server = await register(ws, { name: 'bank', url: bank.url, headers: { authorization: SECRET } });
    // A credential the upstream refuses is refused, and the one kept goes on working.
    await app.expectUnchanged(async () => {
      const wrong = await app.request('PATCH', `/mcp-servers/${server.id}`, {
        key: ws.apiKey,
        body: { headers: { authorization: 'Bearer wrong-upstream-secret', 'x-tenant': 'a' } },
      });
      expect(expectError(wrong, 422, 'upstream_unavailable').message).toMatch(/HTTP 401.*could not be listed, so nothing was written/);
      const dropped = await app.request('PATCH', `/mcp-servers/${server.id}`, { key: ws.apiKey, body: { headers: null } });
      expectError(dropped, 422, 'upstream_unavailable');
    });
    const refreshed = await app.request('POST', `/mcp-servers/${server.id}/refresh`, { key: ws.apiKey, body: {} });
    expect(refreshed.status, refreshed.text).toBe(200);

    const other = await app.createWorkspace();
    const opened = await register(other, { name: 'open', url: open.url, headers: { 'x-api-key': 'open-secret-1' } });
    const replaced = await app.request('PATCH', `/mcp-servers/${opened.id}`, {
      key: other.apiKey,
      body: { headers: { 'X-Api-Key': 'open-secret-2' } },
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.data).toMatchObject({ header_names: ['x-api-key'], aggregateVersion: 2 });
    expect(open.requests.at(-1)!.headers['x-api-key']).toBe('open-secret-2');
    const removed = await app.request('PATCH', `/mcp-servers/${opened.id}`, { key: other.apiKey, body: { headers: null } });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body.data).toMatchObject({ header_names: [], aggregateVersion: 3 });
    const [row] = await app.runtime.db.select().from(mcpServers).where(eq(mcpServers.id, opened.id));
    expect(row!.headersCipher).toBeNull();
    const { events, text } = await mcpEvents(other);
    expect(events.slice(1).map((e) => [e.eventType, e.payload])).toEqual([
      ['mcp_server.updated', { id: opened.id, header_names: ['x-api-key'] }],
      ['mcp_server.updated', { id: opened.id, header_names: [] }],
    ]);
    expect(text).not.toMatch(/open-secret|upstream-secret/);
  });

  it('DELETE removes it (mcp_server.removed); it is then 404', async () => {
    const ws = await app.createWorkspace();
    const server = await register(ws, { name: 'gone', url: open.url });
    const removed = await app.request('DELETE', `/mcp-servers/${server.id}`, { key: ws.apiKey });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body.data).toEqual({ id: server.id, name: 'gone', removed: true });
    expectError(await app.request('GET', `/mcp-servers/${server.id}`, { key: ws.apiKey }), 404, 'not_found');
    expectError(await app.request('DELETE', `/mcp-servers/${server.id}`, { key: ws.apiKey }), 404, 'not_found');
    expect((await app.request('GET', '/mcp-servers', { key: ws.apiKey })).body.data).toEqual([]);
    const { events } = await mcpEvents(ws);
    expect(events.map((e) => [e.eventType, e.payload])).toEqual([
      ['mcp_server.registered', expect.any(Object)],
      ['mcp_server.removed', { id: server.id, name: 'gone' }],
    ]);
    // The name is free again.
    await register(ws, { name: 'gone', url: open.url });
    const verified = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    expect(verified.body.data.ok, verified.text).toBe(true);
  });
});

describe('refreshing the tools', () => {
  it('records what the upstream added, changed and removed; an unchanged listing records nothing', async () => {
    const upstream = await startUpstream({ alpha: {}, beta: { inputSchema: BALANCE_SCHEMA } });
    try {
      const ws = await app.createWorkspace();
      const server = await register(ws, { name: 'changing', url: upstream.url });
      await app.expectUnchanged(async () => {
        const same = await app.request('POST', `/mcp-servers/${server.id}/refresh`, { key: ws.apiKey, body: {} });
        expect(same.status, same.text).toBe(200);
        expect(same.body.data.changed).toBe(false);
        expect(same.body.data.server).toMatchObject({ aggregateVersion: 1, tools: server.tools });
        expect(same.headers.get('etag')).toBe('"1"');
      });

      await upstream.setTool('gamma', { description: 'New.' });
      await upstream.setTool('beta', { inputSchema: TRANSFER_SCHEMA });
      await upstream.removeTool('alpha');
      const res = await app.request('POST', `/mcp-servers/${server.id}/refresh`, { key: ws.apiKey, body: {} });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.changed).toBe(true);
      expect(res.body.data.server.aggregateVersion).toBe(2);
      expect(res.body.data.server.tools.map((t: { name: string; schema_digest: string }) => [t.name, t.schema_digest])).toEqual([
        ['beta', digestOf(TRANSFER_SCHEMA)],
        ['gamma', server.tools[0].schema_digest],
      ]);
      const { events } = await mcpEvents(ws);
      expect(events.map((e) => e.eventType)).toEqual(['mcp_server.registered', 'mcp_server.tools_changed']);
      expect(events[1]).toMatchObject({
        actorType: 'api_key',
        payload: {
          id: server.id,
          name: 'changing',
          tools: [
            { name: 'beta', schema_digest: digestOf(TRANSFER_SCHEMA) },
            { name: 'gamma', schema_digest: server.tools[0].schema_digest },
          ],
          added: ['gamma'],
          removed: ['alpha'],
          changed: ['beta'],
        },
      });
    } finally {
      await upstream.close();
    }
  });

  it('the gateway’s refresh (tools/list_changed) writes as the system, and keeps why a listing failed', async () => {
    const upstream = await startUpstream({ alpha: {} });
    try {
      const ws = await app.createWorkspace();
      const server = await register(ws, { name: 'pushed', url: upstream.url });
      expect(await refreshServerTools(app.runtime, ws.workspaceId, server.id)).toMatchObject({ status: 'unchanged' });
      await upstream.setTool('beta', {});
      const changed = await refreshServerTools(app.runtime, ws.workspaceId, server.id);
      expect(changed).toMatchObject({ status: 'changed', server: { aggregateVersion: 2 } });
      const { events } = await eventsOf(ws, 'mcp_server.tools_changed');
      expect(events).toEqual([
        expect.objectContaining({
          actorType: 'system',
          actorId: 'system:mcp-gateway',
          payload: expect.objectContaining({ added: ['beta'] }),
        }),
      ]);

      upstream.behave('garbage');
      const failed = await refreshServerTools(app.runtime, ws.workspaceId, server.id);
      expect(failed).toMatchObject({ status: 'failed', error: expect.stringMatching(/MCP server/) });
      const kept = await app.request('GET', `/mcp-servers/${server.id}`, { key: ws.apiKey });
      expect(kept.body.data).toMatchObject({ aggregateVersion: 2, last_error: (failed as { error: string }).error });
      expect(kept.body.data.tools.map((t: { name: string }) => t.name)).toEqual(['alpha', 'beta']);
      upstream.behave('ok');
      expect(await refreshServerTools(app.runtime, ws.workspaceId, server.id)).toMatchObject({ status: 'unchanged' });
      expect((await app.request('GET', `/mcp-servers/${server.id}`, { key: ws.apiKey })).body.data.last_error).toBeNull();

      await app.request('DELETE', `/mcp-servers/${server.id}`, { key: ws.apiKey });
      expect(await refreshServerTools(app.runtime, ws.workspaceId, server.id)).toEqual({ status: 'gone' });
    } finally {
      upstream.behave('ok');
      await upstream.close();
    }
  });
});

describe('refusals', () => {
  it('an upstream that is down, answers garbage or refuses the headers: 422 upstream_unavailable, nothing written', async () => {
    const ws = await app.createWorkspace();
    const down = `http://127.0.0.1:${await freePort()}/mcp`;
    const garbage = await startUpstream({ echo: {} });
    garbage.behave('garbage');
    try {
      await app.expectUnchanged(async () => {
        for (const body of [
          { name: 'down', url: down },
          { name: 'garbage', url: garbage.url },
          { name: 'bank', url: bank.url },
          { name: 'bank', url: bank.url, headers: { authorization: 'Bearer not-the-upstream-secret' } },
        ]) {
          const res = await app.request('POST', '/mcp-servers', { key: ws.apiKey, body });
          const error = expectError(res, 422, 'upstream_unavailable');
          expect(error.message, body.name).toMatch(/127\.0\.0\.1:\d+.*could not be listed, so nothing was written\.$/);
          expect(error.message).not.toContain('secret');
        }
      });
      const server = await register(ws, { name: 'flaky', url: open.url });
      open.behave('garbage');
      try {
        await app.expectUnchanged(async () => {
          expectError(
            await app.request('POST', `/mcp-servers/${server.id}/refresh`, { key: ws.apiKey, body: {} }),
            422,
            'upstream_unavailable',
          );
          const moved = await app.request('PATCH', `/mcp-servers/${server.id}`, { key: ws.apiKey, body: { url: down } });
          expectError(moved, 422, 'upstream_unavailable');
        });
      } finally {
        open.behave('ok');
      }
      // A refresh that fails leaves the server as it was, last_error included.
      expect((await app.request('GET', `/mcp-servers/${server.id}`, { key: ws.apiKey })).body.data).toMatchObject({
        url: open.url,
        last_error: null,
        aggregateVersion: 1,
      });
    } finally {
      await garbage.close();
    }
  });

  it('a loopback URL without the operator’s allow list: 400 naming url, nothing written, the upstream never asked', async () => {
    const strict = await startTestApp({}, { primaryName: 'strict' });
    try {
      const asked = open.requests.length;
      const before = await strict.counts();
      for (const url of [open.url, open.url.replace('127.0.0.1', 'localhost'), open.url.replace('127.0.0.1', '[::1]')]) {
        const res = await strict.request('POST', '/mcp-servers', { body: { name: 'local', url } });
        const error = expectError(res, 400, 'validation_failed');
        expect(error.details.issues.map((i: { path: string }) => i.path)).toEqual(['url']);
        expect(error.message).toMatch(/public addresses only.*MCP_UPSTREAM_ALLOW_HOSTS/);
      }
      expect(await strict.counts()).toEqual(before);
      expect(open.requests.length).toBe(asked);
    } finally {
      await strict.close();
    }
  });

  it('refuses hostile input with 400 naming the field, before asking the upstream', async () => {
    const ws = await app.createWorkspace();
    const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']));
    const cases: [Record<string, unknown>, string, string][] = [
      [{ name: 'Bank', url: open.url }, 'validation_failed', 'name'],
      [{ name: 'my_bank', url: open.url }, 'validation_failed', 'name'],
      [{ name: 'a'.repeat(33), url: open.url }, 'validation_failed', 'name'],
      [{ name: '', url: open.url }, 'validation_failed', 'name'],
      [{ name: 'x', url: 'ftp://127.0.0.1/mcp' }, 'validation_failed', 'url'],
      [{ name: 'x', url: `${open.url}#frag` }, 'validation_failed', 'url'],
      [{ name: 'x', url: open.url.replace('http://', 'http://u:p@') }, 'validation_failed', 'url'],
      [{ name: 'x', url: open.url, headers: { Host: 'evil.example' } }, 'validation_failed', 'headers.Host'],
      [{ name: 'x', url: open.url, headers: { 'mcp-session-id': 'abc' } }, 'validation_failed', 'headers.mcp-session-id'],
      [{ name: 'x', url: open.url, headers: tooMany }, 'validation_failed', 'headers'],
      [{ name: 'x', url: open.url, headers: { 'x-a': 'ok\r\nx-injected: 1' } }, 'validation_failed', 'headers.x-a'],
      [{ name: 'x', url: open.url, headers: { 'x-a': 'y'.repeat(4097) } }, 'validation_failed', 'headers.x-a'],
      [{ name: 'x', url: open.url, headers: { 'bad name': 'v' } }, 'validation_failed', 'headers.bad name'],
      [{ name: 'x', url: open.url, headers: { 'X-A': '1', 'x-a': '2' } }, 'validation_failed', 'headers.x-a'],
      [
        { name: 'x', url: open.url, guards: [{ tool: 'echo', mode: 'allow', urgency: 'critical' }] },
        'validation_failed',
        'guards.0.urgency',
      ],
      [{ name: 'x', url: open.url, guards: [{ tool: 'echo', mode: 'deny', editable: false }] }, 'validation_failed', 'guards.0.editable'],
      [{ name: 'x', url: open.url, guards: [{ tool: 'a b', mode: 'allow' }] }, 'validation_failed', 'guards.0.tool'],
      [{ name: 'x', url: open.url, guards: [{ tool: 'echo', mode: 'maybe' }] }, 'validation_failed', 'guards.0.mode'],
      [
        { name: 'x', url: open.url, guards: Array.from({ length: 101 }, () => ({ tool: '*', mode: 'allow' })) },
        'validation_failed',
        'guards',
      ],
      [{ name: 'x', url: open.url, timeout_ms: 999 }, 'validation_failed', 'timeout_ms'],
      [{ name: 'x', url: open.url, timeout_ms: 300_001 }, 'validation_failed', 'timeout_ms'],
      [{ name: 'x', url: open.url, secret: 'no' }, 'unknown_field', 'secret'],
      [{ name: 'x', url: open.url, guards: [{ tool: 'echo', mode: 'ask', when: 'always' }] }, 'unknown_field', 'guards.0.when'],
    ];
    const asked = open.requests.length;
    await app.expectUnchanged(async () => {
      for (const [body, code, field] of cases) {
        const res = await app.request('POST', '/mcp-servers', { key: ws.apiKey, body });
        const error = expectError(res, 400, code);
        const named = code === 'unknown_field' ? error.details.fields : error.details.issues.map((i: { path: string }) => i.path);
        expect(named, JSON.stringify(body).slice(0, 200)).toContain(field);
        expect(res.text).not.toContain('x-injected');
      }
    });
    expect(open.requests.length).toBe(asked);
  });

  it('refuses a policy that names a stranger or asks several approvals of editable arguments (400, nothing written)', async () => {
    const ws = await app.createWorkspace();
    const viewer = await app.member('viewer', ws.workspaceId);
    await app.member('approver', ws.workspaceId);
    await app.expectUnchanged(async () => {
      for (const guard of [
        { tool: 'echo', mode: 'ask', policy: { approvers: { user_ids: [viewer.userId] } } },
        { tool: 'echo', mode: 'ask', policy: { approvals_required: 2 } },
        { tool: 'echo', mode: 'ask', editable: false, policy: { approvals_required: 5 } },
      ]) {
        const res = await app.request('POST', '/mcp-servers', { key: ws.apiKey, body: { name: 'x', url: open.url, guards: [guard] } });
        expect(expectError(res, 400, 'validation_failed').details.issues.map((i: { path: string }) => i.path)).toEqual(['guards.0.policy']);
      }
    });
    const two = await register(ws, {
      name: 'x',
      url: open.url,
      guards: [{ tool: 'echo', mode: 'ask', editable: false, policy: { approvals_required: 2 } }],
    });
    expect(two.guards[0].policy.stages[0].approvals_required).toBe(2);
  });

  it('a name taken is 409 naming the server; the 21st server is 409; both before asking the upstream', async () => {
    const ws = await app.createWorkspace();
    const first = await register(ws, { name: 'one', url: open.url });
    const asked = open.requests.length;
    await app.expectUnchanged(async () => {
      const again = await app.request('POST', '/mcp-servers', { key: ws.apiKey, body: { name: 'one', url: open.url } });
      expect(expectError(again, 409, 'conflict').details).toEqual({ id: first.id });
    });
    expect(open.requests.length).toBe(asked);
    const second = await register(ws, { name: 'two', url: open.url });
    const renamed = await app.request('PATCH', `/mcp-servers/${second.id}`, { key: ws.apiKey, body: { name: 'one' } });
    expect(expectError(renamed, 409, 'conflict').details).toEqual({ id: first.id });

    for (let i = 3; i <= MAX_SERVERS_PER_WORKSPACE; i++) await register(ws, { name: `s-${i}`, url: open.url });
    const listed = await app.request('GET', '/mcp-servers?limit=100', { key: ws.apiKey });
    expect(listed.body.data).toHaveLength(MAX_SERVERS_PER_WORKSPACE);
    const asked20 = open.requests.length;
    await app.expectUnchanged(async () => {
      const full = await app.request('POST', '/mcp-servers', { key: ws.apiKey, body: { name: 'one-too-many', url: open.url } });
      expect(expectError(full, 409, 'conflict').message).toMatch(/at most 20/);
    });
    expect(open.requests.length).toBe(asked20);
  });

  it('viewers and approvers can neither read nor write (403); another workspace’s key sees 404; owners may', async () => {
    const ws = await app.createWorkspace();
    const server = await register(ws, { name: 'mine', url: open.url });
    const [viewer, approver, owner] = await Promise.all([
      app.member('viewer', ws.workspaceId),
      app.member('approver', ws.workspaceId),
      app.member('owner', ws.workspaceId),
    ]);
    const other = await app.createWorkspace();
    await app.expectUnchanged(async () => {
      for (const who of [viewer, approver]) {
        const opts = { session: who.session };
        expectError(await app.request('POST', '/mcp-servers', { ...opts, body: { name: 'theirs', url: open.url } }), 403, 'forbidden');
        expectError(await app.request('GET', '/mcp-servers', opts), 403, 'forbidden');
        expectError(await app.request('GET', `/mcp-servers/${server.id}`, opts), 403, 'forbidden');
        expectError(
          await app.request('PATCH', `/mcp-servers/${server.id}`, { ...opts, body: { default_mode: 'allow' } }),
          403,
          'forbidden',
        );
        expectError(await app.request('POST', `/mcp-servers/${server.id}/refresh`, { ...opts, body: {} }), 403, 'forbidden');
        expectError(await app.request('DELETE', `/mcp-servers/${server.id}`, opts), 403, 'forbidden');
      }
      for (const [method, path] of [
        ['GET', `/mcp-servers/${server.id}`],
        ['DELETE', `/mcp-servers/${server.id}`],
      ] as const) {
        expectError(await app.request(method, path, { key: other.apiKey }), 404, 'not_found');
      }
      expectError(
        await app.request('PATCH', `/mcp-servers/${server.id}`, { key: other.apiKey, body: { default_mode: 'allow' } }),
        404,
        'not_found',
      );
      expect((await app.request('GET', '/mcp-servers', { key: other.apiKey })).body.data).toEqual([]);
    });
    const byOwner = await app.request('PATCH', `/mcp-servers/${server.id}`, { session: owner.session, body: { default_mode: 'allow' } });
    expect(byOwner.status, byOwner.text).toBe(200);
    expect(byOwner.body.data.tools[0].mode).toBe('allow');
    const { events } = await eventsOf(ws, 'mcp_server.updated');
    expect(events).toEqual([
      expect.objectContaining({ actorType: 'human', actorId: owner.userId, payload: { id: server.id, default_mode: 'allow' } }),
    ]);
  });
});
