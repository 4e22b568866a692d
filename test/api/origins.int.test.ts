/**
 * Which pages may write with a session, and what every answer says about transport, decided by
 * APP_URL and never by the request's Host: a client writes its own Host, so a request that says
 * `Host: evil.example` and `Origin: http://evil.example` is a page of evil.example, not of the app.
 * When APP_URL is https, every answer carries HSTS; on http none does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRICT_TRANSPORT_SECURITY } from '@/server/http/transport-security';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { internalClient } from '../support/internal';

let app: TestApp;
let approver: TestMember;
let secure: TestApp;

beforeAll(async () => {
  // APP_URL left to its default, http://localhost:3000, as npm start has it.
  app = await startTestApp();
  approver = await app.member('approver');
  secure = await startTestApp({ APP_URL: 'https://work.example.com' }, { primaryName: 'secure' });
});
afterAll(async () => {
  await app?.close();
  await secure?.close();
});

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'origins', version: '1' } },
});

/**
 * An initialize POST to /mcp over HTTP with the app's key and these headers; `host` (default
 * 127.0.0.1:3000) is sent as the Host header, the request still goes to the test's server.
 */
async function mcp(target: TestApp, { host = '127.0.0.1:3000', ...headers }: Record<string, string>): Promise<Response> {
  return target.fetch(
    new Request(`http://${host}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${target.ws.apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: INITIALIZE,
    }),
  );
}

describe('the MCP endpoint compares a page’s Origin with APP_URL’s', () => {
  it('refuses a page of evil.example even when the Host says evil.example, and changes nothing', async () => {
    for (const [host, origin] of [
      ['evil.example', 'http://evil.example'],
      ['evil.example:3000', 'http://evil.example:3000'],
      ['127.0.0.1:3000', 'http://127.0.0.1:3999'],
      ['localhost:3000', 'https://localhost:3000'],
    ]) {
      const res = await mcp(app, { host: host!, origin: origin! });
      expect(res.status, `${host} ${origin}`).toBe(403);
      const body = (await res.json()) as { error: { code: string; requestId: string } };
      expect(body.error.code).toBe('forbidden');
      expect(body.error.requestId).toBe(res.headers.get('x-request-id'));
    }
  });

  it('accepts APP_URL’s origin, its loopback spellings, and clients that send no Origin', async () => {
    for (const origin of ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000', undefined]) {
      const res = await mcp(app, { host: 'evil.example', ...(origin ? { origin } : {}) });
      expect(res.status, String(origin)).toBe(200);
      expect(await res.text()).toContain('"protocolVersion"');
    }
  });

  it('with a non-loopback APP_URL, only that origin: loopback spellings are not the app’s', async () => {
    expect((await mcp(secure, { origin: 'https://work.example.com' })).status).toBe(200);
    expect((await mcp(secure, { host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3000' })).status).toBe(403);
    expect((await mcp(secure, { host: 'work.example.com', origin: 'http://work.example.com' })).status).toBe(403);
  });
});

describe('the interface’s endpoint (/api/trpc) compares a write’s Origin with APP_URL’s', () => {
  it('refuses a session write whose Origin only the Host vouches for, and changes nothing', async () => {
    const trpc = internalClient(app.runtime);
    const raised = await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'Host says evil' } });
    const id = raised.body.decision.id as string;
    const refused = await trpc.mutate(
      'decisions.approve',
      { id },
      { session: approver.session, origin: 'http://evil.example', headers: { host: 'evil.example' } },
    );
    expect(refused.status).toBe(403);
    expect(refused.code).toBe('forbidden');
    expect((await app.request('GET', `/decisions/${id}`)).body.decision.status).toBe('pending');
    const accepted = await trpc.mutate('decisions.approve', { id }, { session: approver.session, origin: 'http://localhost:3000' });
    expect(accepted.status).toBe(200);
    expect((await app.request('GET', `/decisions/${id}`)).body.decision.status).toBe('approved');
  });
});

describe('HSTS follows APP_URL’s scheme', () => {
  it('is on every /api/v1 answer when APP_URL is https: success, client error, no credential', async () => {
    const answers = [
      await secure.request('GET', '/health'),
      await secure.request('GET', '/decisions'),
      await secure.request('GET', '/decisions/00000000-0000-4000-8000-000000000000'),
      await secure.request('GET', '/decisions', { key: null }),
      await secure.request('POST', '/work', { rawBody: '{', headers: { 'content-type': 'application/json' } }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 404, 401, 400]);
    for (const a of answers) expect(a.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
  });

  it('is on every /mcp answer when APP_URL is https, refusals included', async () => {
    const ok = await mcp(secure, {});
    const foreign = await mcp(secure, { origin: 'https://evil.example' });
    const unknownKey = await mcp(secure, { authorization: 'Bearer aws_not_a_key' });
    expect([ok.status, foreign.status, unknownKey.status]).toEqual([200, 403, 401]);
    for (const res of [ok, foreign, unknownKey]) {
      expect(res.headers.get('strict-transport-security')).toBe(STRICT_TRANSPORT_SECURITY);
      await res.body?.cancel();
    }
  });

  it('is never sent when APP_URL is http', async () => {
    const answers = [await app.request('GET', '/health'), await app.request('GET', '/decisions', { key: null })];
    for (const a of answers) expect(a.headers.get('strict-transport-security')).toBeNull();
    const res = await mcp(app, {});
    expect(res.headers.get('strict-transport-security')).toBeNull();
    await res.body?.cancel();
  });
});
