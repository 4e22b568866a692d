/**
 * The client the gateway calls upstream MCP servers with, against a real SDK server on loopback:
 * listing, calling, the headers sent, and what the service refuses to take from an upstream (an
 * address not allowed, an answer over the limit, a slow or garbled answer, a port nobody answers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUpstream, type Upstream } from '@/test/support/upstream-mcp';
import { digestOf } from '@/server/ledger/canonical';
import { listUpstreamTools, UpstreamError, UpstreamPool, type UpstreamTarget } from './upstream';

const ALLOW = ['127.0.0.1'];
const TRANSFER_SCHEMA = {
  type: 'object',
  properties: { to: { type: 'string' }, amount: { type: 'number' } },
  required: ['to', 'amount'],
};

let upstream: Upstream;
let target: UpstreamTarget;
const pools: UpstreamPool[] = [];
const pool = (allow = ALLOW, onChanged?: (key: { serverId: string }) => void) => {
  const p = new UpstreamPool(allow, onChanged);
  pools.push(p);
  return p;
};

beforeAll(async () => {
  upstream = await startUpstream(
    {
      transfer: { description: 'Move money.', inputSchema: TRANSFER_SCHEMA },
      big: { run: () => ({ content: [{ type: 'text', text: 'x'.repeat(5 * 1024 * 1024) }] }) },
      slow: { run: () => new Promise((resolve) => setTimeout(() => resolve({ content: [{ type: 'text', text: 'late' }] }), 3_000)) },
      'bad name!': {},
    },
    { requireHeaders: { authorization: 'Bearer upstream-secret' } },
  );
  target = { url: upstream.url, headers: { Authorization: 'Bearer upstream-secret' }, timeoutMs: 10_000 };
});
afterAll(async () => {
  for (const p of pools) await p.close();
  await upstream?.close();
});

const error = async (promise: Promise<unknown>): Promise<UpstreamError> => {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  return err as UpstreamError;
};

describe('listing', () => {
  it('lists the tools with the digest of each input schema, sending the headers, and leaves out a name the protocol does not allow', async () => {
    const tools = await listUpstreamTools(target, ALLOW);
    expect(tools.map((t) => t.name)).toEqual(['transfer', 'big', 'slow']);
    const transfer = tools[0]!;
    expect(transfer).toMatchObject({ description: 'Move money.', input_schema: TRANSFER_SCHEMA });
    expect(transfer.schema_digest).toBe(digestOf(TRANSFER_SCHEMA));
    expect(upstream.requests.length).toBeGreaterThan(0);
    expect(upstream.requests.every((r) => r.headers.authorization === 'Bearer upstream-secret')).toBe(true);
  });

  it('an upstream that refuses the headers, a loopback address not allowed, a closed port and garbage are each a clear error', async () => {
    expect((await error(listUpstreamTools({ ...target, headers: {} }, ALLOW))).kind).toBe('refused');
    const refused = await error(listUpstreamTools(target, []));
    expect(refused.kind).toBe('refused');
    expect(refused.message).toMatch(/address upstreams may not reach/);
    const closed = await error(listUpstreamTools({ ...target, url: 'http://127.0.0.1:9/mcp' }, ALLOW));
    expect(closed.kind).toBe('unreachable');
    expect(closed.message).not.toContain('upstream-secret');
    upstream.behave('garbage');
    try {
      expect((await error(listUpstreamTools(target, ALLOW))).kind).toMatch(/protocol|refused/);
    } finally {
      upstream.behave('ok');
    }
  });
});

describe('calling through the pool', () => {
  it('sends the arguments exactly as given, once, and passes the result back', async () => {
    const before = upstream.calls.length;
    const result = await pool().call({ workspaceId: 'w', serverId: 's1', version: 1 }, target, 'transfer', { to: 'bob', amount: 12.5 });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ to: 'bob', amount: 12.5 }) }]);
    expect(upstream.calls.slice(before)).toMatchObject([{ tool: 'transfer', arguments: { to: 'bob', amount: 12.5 } }]);
  });

  it('keeps one connection per server across calls, and connects anew when its settings change', async () => {
    const p = pool();
    const initializes = () => upstream.requests.filter((r) => r.method === 'POST').length;
    await p.call({ workspaceId: 'w', serverId: 's2', version: 1 }, target, 'transfer', { to: 'a', amount: 1 });
    const afterFirst = initializes();
    await p.call({ workspaceId: 'w', serverId: 's2', version: 1 }, target, 'transfer', { to: 'a', amount: 2 });
    // One POST for the call; no new handshake.
    expect(initializes()).toBe(afterFirst + 1);
    expect(p.size).toBe(1);
    await p.call({ workspaceId: 'w', serverId: 's2', version: 2 }, target, 'transfer', { to: 'a', amount: 3 });
    expect(initializes()).toBeGreaterThan(afterFirst + 2);
    expect(p.size).toBe(1);
  });

  it('an answer over the limit is refused without reading it all; a slow one times out; the pool goes on working', async () => {
    const p = pool();
    expect((await error(p.call({ workspaceId: 'w', serverId: 's3', version: 1 }, target, 'big', {}))).kind).toBe('too_large');
    const slow = await error(p.call({ workspaceId: 'w', serverId: 's3', version: 1 }, { ...target, timeoutMs: 300 }, 'slow', {}));
    expect(slow.kind).toBe('timeout');
    expect(slow.message).toMatch(/within 300 ms/);
    const ok = await p.call({ workspaceId: 'w', serverId: 's3', version: 1 }, target, 'transfer', { to: 'c', amount: 1 });
    expect(ok.isError).toBeFalsy();
  });

  it('an upstream that restarted (its session gone) is connected to again and the call sent once', async () => {
    const p = pool();
    await p.call({ workspaceId: 'w', serverId: 's5', version: 1 }, target, 'transfer', { to: 'e', amount: 1 });
    await upstream.dropSessions();
    const before = upstream.calls.length;
    const result = await p.call({ workspaceId: 'w', serverId: 's5', version: 1 }, target, 'transfer', { to: 'e', amount: 2 });
    expect(result.isError).toBeFalsy();
    expect(upstream.calls.slice(before)).toMatchObject([{ tool: 'transfer', arguments: { to: 'e', amount: 2 } }]);
  });

  it('hears the upstream say its tools changed', async () => {
    const changed: string[] = [];
    const p = pool(ALLOW, (key) => changed.push(key.serverId));
    await p.call({ workspaceId: 'w', serverId: 's4', version: 1 }, target, 'transfer', { to: 'd', amount: 1 });
    await upstream.setTool('refund', { description: 'Give it back.' });
    await expect.poll(() => changed, { timeout: 5_000 }).toContain('s4');
  });
});
