/**
 * Webhook endpoints, the rules (both engines): create with a secret shown once, read, change,
 * delete, rotate, test; every change a ledger event without the secret; URLs that reach private
 * addresses refused; who may do what. Delivery is in webhook-delivery.int.test.ts.
 */
import { createHash, randomUUID } from 'node:crypto';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEvents, webhookEndpoints } from '@/db/schema';
import { MAX_ENDPOINTS_PER_WORKSPACE } from '@/server/domain/webhooks/endpoints';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { internalClient } from '../support/internal';

let app: TestApp;
beforeAll(async () => {
  // Private addresses refused, as in production; public IP literals need no DNS.
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const PUBLIC_URL = 'http://93.184.216.34/hooks/aws';

/** The digest events record of a URL: SHA-256 of the URL as written. */
const sha256Of = (url: string) => `sha256:${createHash('sha256').update(url).digest('hex')}`;

async function eventsOf(aggregateId: string) {
  const rows = await app.runtime.db
    .select()
    .from(ledgerEvents)
    .where(eq(ledgerEvents.aggregateId, aggregateId))
    .orderBy(asc(ledgerEvents.sequence));
  // The payload as the append keeps it: its canonical text.
  return rows.map((r) => ({ ...r, payload: JSON.parse(r.payloadText!) as Record<string, any> }));
}

async function create(ws: TestWorkspace, body: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: PUBLIC_URL, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: string; secret: string; event_types: string[] };
}

describe('creating an endpoint', () => {
  it('answers 201 with the secret, once; reads never show it, and no event or column holds it', async () => {
    const ws = await app.createWorkspace();
    const res = await app.request('POST', '/webhooks', {
      key: ws.apiKey,
      body: { url: PUBLIC_URL + '?token=abc', event_types: ['decision.*', 'task.created'], description: 'Slack bridge' },
    });
    expect(res.status).toBe(201);
    const created = res.body.data;
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created).toMatchObject({
      workspace_id: ws.workspaceId,
      url: PUBLIC_URL + '?token=abc',
      event_types: ['decision.*', 'task.created'],
      description: 'Slack bridge',
      status: 'enabled',
      disabled_reason: null,
    });

    const listed = await app.request('GET', '/webhooks', { key: ws.apiKey });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.text).not.toContain(created.secret);
    const one = await app.request('GET', `/webhooks/${created.id}`, { key: ws.apiKey });
    expect(one.status).toBe(200);
    expect(one.body.data).not.toHaveProperty('secret');

    const events = await eventsOf(created.id);
    expect(events.map((e) => e.eventType)).toEqual(['webhook_endpoint.created']);
    expect(events[0]!.payload).toEqual({
      id: created.id,
      target: { scheme: 'http', host: '93.184.216.34', port: 80, url_digest: sha256Of(PUBLIC_URL + '?token=abc') },
      event_types: ['decision.*', 'task.created'],
      description: 'Slack bridge',
    });
    const [row] = await app.runtime.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, created.id));
    const secretBody = created.secret.slice('whsec_'.length);
    expect(JSON.stringify(row)).not.toContain(secretBody);
    // The cursor starts at its own creation: history is not replayed to it.
    expect(row!.deliveredSequence).toBe(events[0]!.sequence);
  });

  it('lists newest first in pages, as every list does', async () => {
    const ws = await app.createWorkspace();
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await create(ws, { description: `n${i}` })).id);
    const first = await app.request('GET', '/webhooks?limit=2', { key: ws.apiKey });
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([made[2], made[1]]);
    expect(first.body.meta).toMatchObject({ hasMore: true, limit: 2, workspaceId: ws.workspaceId });
    const second = await app.request('GET', `/webhooks?limit=2&cursor=${encodeURIComponent(first.body.meta.nextCursor)}`, {
      key: ws.apiKey,
    });
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual([made[0]]);
    expect(second.body.meta).toMatchObject({ hasMore: false, nextCursor: null });
    const foreign = await app.request('GET', `/webhooks?cursor=${encodeURIComponent(first.body.meta.nextCursor)}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_cursor');
  });

  it('subscribes to every event by default and keeps each type once', async () => {
    const ws = await app.createWorkspace();
    expect((await create(ws)).event_types).toEqual(['*']);
    expect((await create(ws, { event_types: ['task.created', 'task.created', 'run.*'] })).event_types).toEqual(['task.created', 'run.*']);
  });

  it.each([
    ['loopback', 'http://127.0.0.1:8080/hook'],
    ['loopback by name', 'http://localhost/hook'],
    ['IPv6 loopback', 'http://[::1]/hook'],
    ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/hook'],
    ['private', 'https://10.1.2.3/hook'],
    ['private 192.168', 'http://192.168.1.10/hook'],
    ['link-local metadata', 'http://169.254.169.254/latest/meta-data/'],
    ['unique-local IPv6', 'http://[fd00::1]/hook'],
    ['unspecified', 'http://0.0.0.0/hook'],
    ['carrier-grade NAT (some clouds’ metadata)', 'http://100.100.100.200/hook'],
    ['IPv4-compatible IPv6 loopback (deprecated ::/96)', 'http://[::127.0.0.1]/'],
    ['IPv4-compatible IPv6 private', 'http://[::a00:1]/hook'],
    ['6to4 of loopback', 'http://[2002:7f00:1::]/hook'],
    ['NAT64 of loopback', 'http://[64:ff9b::7f00:1]/hook'],
  ])('refuses a %s URL with 400, changing nothing', async (_name, url) => {
    const ws = await app.createWorkspace();
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.message).toMatch(/^The URL resolves to .*public addresses only/);
    });
  });

  it.each([
    ['not a URL', 'hooks.example.com/x', /absolute http/],
    ['another scheme', 'ftp://93.184.216.34/x', /http:\/\/ or https:\/\//],
    ['credentials in it', 'http://user:pw@93.184.216.34/x', /user name or password/],
  ])('refuses %s', async (_name, url, message) => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/webhooks', { body: { url } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.message).toMatch(message);
      expect(res.body.error.message).toMatch(/^The URL /);
    });
  });

  it.each([[['Decision.created']], [['decision.*.x']], [[]], [['*x']], [['']]])('refuses event_types %j', async (types) => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/webhooks', { body: { url: PUBLIC_URL, event_types: types } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    });
  });

  it('refuses unknown fields', async () => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/webhooks', { body: { url: PUBLIC_URL, secret: 'whsec_mine' } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('unknown_field');
    });
  });

  it(`allows ${MAX_ENDPOINTS_PER_WORKSPACE} endpoints per workspace, then 409`, async () => {
    const ws = await app.createWorkspace();
    for (let i = 0; i < MAX_ENDPOINTS_PER_WORKSPACE; i++) await create(ws);
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: PUBLIC_URL } });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
    });
  });
});

describe('what the ledger says of an endpoint', () => {
  it('never its URL’s path or query, which Slack-style URLs keep their secret in: a viewer refused /webhooks reads none of it in the ledger', async () => {
    const ws = await app.createWorkspace();
    const slack = 'https://93.184.216.34:8443/services/T0SECRET/B0SECRET/XXXXpathSecretXXXX?token=querySecret';
    const { id } = await create(ws, { url: slack });
    await app.request('PATCH', `/webhooks/${id}`, { key: ws.apiKey, body: { url: slack.replace('XXXX', 'YYYY') } });
    await app.request('DELETE', `/webhooks/${id}`, { key: ws.apiKey });
    const viewer = await app.member('viewer', ws.workspaceId);
    expect((await app.request('GET', '/webhooks', { session: viewer.session })).status).toBe(403);
    // What a viewer reads: the ledger page's own procedure (the bundle and the stream serve these same events).
    const read = await internalClient(app.runtime).query('ledger.browse', { workspace_id: ws.workspaceId }, { session: viewer.session });
    expect(read.status).toBe(200);
    const endpointEvents = read.data.events
      .filter((e: { eventType: string }) => e.eventType.startsWith('webhook_endpoint.'))
      .sort((a: { sequence: number }, b: { sequence: number }) => a.sequence - b.sequence);
    expect(endpointEvents.map((e: { eventType: string }) => e.eventType)).toEqual([
      'webhook_endpoint.created',
      'webhook_endpoint.updated',
      'webhook_endpoint.deleted',
    ]);
    for (const e of endpointEvents) {
      expect(e.payload.target).toMatchObject({
        scheme: 'https',
        host: '93.184.216.34',
        port: 8443,
        url_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      });
    }
    expect(endpointEvents[0].payload.target.url_digest).toBe(sha256Of(slack));
    expect(endpointEvents[1].payload.target.url_digest).toBe(sha256Of(slack.replace('XXXX', 'YYYY')));
    const everything = JSON.stringify(await app.runtime.db.select().from(ledgerEvents).where(eq(ledgerEvents.workspaceId, ws.workspaceId)));
    for (const secret of ['SECRET', 'pathSecret', 'querySecret', '/services/']) expect(everything).not.toContain(secret);
  });
});

describe('changing an endpoint', () => {
  it('records each change, appends nothing for a change that changes nothing, and disables and enables', async () => {
    const ws = await app.createWorkspace();
    const { id } = await create(ws);
    const changed = await app.request('PATCH', `/webhooks/${id}`, {
      key: ws.apiKey,
      body: { url: 'https://93.184.216.34/new?sig=1', event_types: ['run.*'], description: 'runs only' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ url: 'https://93.184.216.34/new?sig=1', event_types: ['run.*'], description: 'runs only' });
    const same = await app.request('PATCH', `/webhooks/${id}`, { key: ws.apiKey, body: { description: 'runs only' } });
    expect(same.status).toBe(200);

    const off = await app.request('PATCH', `/webhooks/${id}`, { key: ws.apiKey, body: { enabled: false } });
    expect(off.body.data).toMatchObject({ status: 'disabled', disabled_reason: 'Disabled by a member of the workspace.' });
    const on = await app.request('PATCH', `/webhooks/${id}`, { key: ws.apiKey, body: { enabled: true } });
    expect(on.body.data).toMatchObject({ status: 'enabled', disabled_reason: null });

    const events = await eventsOf(id);
    expect(events.map((e) => e.eventType)).toEqual([
      'webhook_endpoint.created',
      'webhook_endpoint.updated',
      'webhook_endpoint.disabled',
      'webhook_endpoint.enabled',
    ]);
    expect(events[1]!.payload).toEqual({
      id,
      target: { scheme: 'https', host: '93.184.216.34', port: 443, url_digest: sha256Of('https://93.184.216.34/new?sig=1') },
      event_types: ['run.*'],
      description: 'runs only',
    });
    expect(events.map((e) => e.aggregateVersion)).toEqual([1, 2, 3, 4]);
  });

  it('sends the version as ETag; If-Match of an older version is 412 and changes nothing, the current one applies', async () => {
    const ws = await app.createWorkspace();
    const { id } = await create(ws);
    const read = await app.request('GET', `/webhooks/${id}`, { key: ws.apiKey });
    expect(read.headers.get('etag')).toBe('"1"');
    expect(read.body.data.aggregateVersion).toBe(1);
    const first = await app.request('PATCH', `/webhooks/${id}`, {
      key: ws.apiKey,
      headers: { 'if-match': '"1"' },
      body: { description: 'one' },
    });
    expect(first.status).toBe(200);
    expect(first.headers.get('etag')).toBe('"2"');
    await app.expectUnchanged(async () => {
      const stale = await app.request('PATCH', `/webhooks/${id}`, {
        key: ws.apiKey,
        headers: { 'if-match': '"1"' },
        body: { description: 'two' },
      });
      expect(stale.status).toBe(412);
      expect(stale.body.error.code).toBe('precondition_failed');
      const garbled = await app.request('PATCH', `/webhooks/${id}`, {
        key: ws.apiKey,
        headers: { 'if-match': 'v2' },
        body: { description: 'two' },
      });
      expect(garbled.status).toBe(400);
    });
    const weak = await app.request('PATCH', `/webhooks/${id}`, {
      key: ws.apiKey,
      headers: { 'if-match': 'W/"2"' },
      body: { description: 'two' },
    });
    expect(weak.status).toBe(200);
    expect(weak.body.data).toMatchObject({ description: 'two', aggregateVersion: 3 });
  });

  it('checks a new URL as a new endpoint’s', async () => {
    const { id } = await create(app.ws);
    await app.expectUnchanged(async () => {
      const res = await app.request('PATCH', `/webhooks/${id}`, { body: { url: 'http://127.0.0.1/x' } });
      expect(res.status).toBe(400);
    });
  });

  it('rotates the secret: a new one, once, recorded without either', async () => {
    const ws = await app.createWorkspace();
    const created = await create(ws);
    const rotated = await app.request('POST', `/webhooks/${created.id}/rotate-secret`, { key: ws.apiKey });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(created.secret);
    expect(Date.parse(rotated.body.data.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    const events = await eventsOf(created.id);
    expect(events.at(-1)!.eventType).toBe('webhook_endpoint.secret_rotated');
    const all = JSON.stringify(events);
    for (const s of [created.secret, rotated.body.data.secret]) expect(all).not.toContain(s.slice(6));
  });

  it('asks for a test delivery: 202 with the event it recorded', async () => {
    const { id } = await create(app.ws);
    const res = await app.request('POST', `/webhooks/${id}/test`, {});
    expect(res.status).toBe(202);
    const events = await eventsOf(id);
    expect(events.at(-1)).toMatchObject({
      id: res.body.data.event_id,
      eventType: 'webhook_endpoint.test',
      sequence: res.body.data.sequence,
    });
  });

  it('deletes: 200, then 404, recorded', async () => {
    const { id } = await create(app.ws);
    const res = await app.request('DELETE', `/webhooks/${id}`, {});
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id, deleted: true });
    expect((await app.request('GET', `/webhooks/${id}`, {})).status).toBe(404);
    expect((await eventsOf(id)).at(-1)!.eventType).toBe('webhook_endpoint.deleted');
  });

  it('lists no deliveries for a new endpoint, and refuses a cursor of another list', async () => {
    const { id } = await create(app.ws);
    const res = await app.request('GET', `/webhooks/${id}/deliveries`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.meta).toMatchObject({ hasMore: false, nextCursor: null });
    const forged = await app.request('GET', `/webhooks/${id}/deliveries?cursor=abc`);
    expect(forged.status).toBe(400);
    expect(forged.body.error.code).toBe('invalid_cursor');
  });
});

describe('the envelope', () => {
  it('answers every webhook operation {data, meta} like other resources, with the deprecated ok beside them (docs/contract.md §10.4)', async () => {
    const ws = await app.createWorkspace();
    const meta = { apiVersion: '1', workspaceId: ws.workspaceId };
    const created = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: PUBLIC_URL } });
    const id = created.body.data.id;
    const answers = [
      created,
      await app.request('GET', `/webhooks/${id}`, { key: ws.apiKey }),
      await app.request('PATCH', `/webhooks/${id}`, { key: ws.apiKey, body: { description: 'x' } }),
      await app.request('POST', `/webhooks/${id}/rotate-secret`, { key: ws.apiKey }),
      await app.request('POST', `/webhooks/${id}/test`, { key: ws.apiKey }),
      await app.request('DELETE', `/webhooks/${id}`, { key: ws.apiKey }),
    ];
    for (const res of answers) {
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
      expect(res.body).toEqual({ data: expect.any(Object), meta, ok: true });
    }
  });
});

describe('who may', () => {
  it('hides another workspace’s endpoint as missing (404), for every operation', async () => {
    const other = await app.createWorkspace();
    const { id } = await create(other);
    await app.expectUnchanged(async () => {
      for (const [method, path] of [
        ['GET', `/webhooks/${id}`],
        ['PATCH', `/webhooks/${id}`],
        ['DELETE', `/webhooks/${id}`],
        ['POST', `/webhooks/${id}/rotate-secret`],
        ['POST', `/webhooks/${id}/test`],
        ['GET', `/webhooks/${id}/deliveries`],
      ] as const) {
        const res = await app.request(method, path, method === 'GET' ? {} : { body: {} });
        expect(res.status, `${method} ${path}`).toBe(404);
      }
      expect((await app.request('GET', `/webhooks/${randomUUID()}`)).status).toBe(404);
    });
  });

  it('lets owners manage them signed in, and refuses approvers and viewers (403)', async () => {
    const ws = await app.createWorkspace();
    const owner = await app.member('owner', ws.workspaceId);
    const made = await app.request('POST', '/webhooks', {
      session: owner.session,
      body: { workspace_id: ws.workspaceId, url: PUBLIC_URL },
    });
    expect(made.status).toBe(201);
    for (const role of ['approver', 'viewer'] as const) {
      const member = await app.member(role, ws.workspaceId);
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/webhooks', {
          session: member.session,
          body: { workspace_id: ws.workspaceId, url: PUBLIC_URL },
        });
        expect(res.status).toBe(403);
        expect((await app.request('GET', `/webhooks/${made.body.data.id}`, { session: member.session })).status).toBe(403);
      });
    }
  });

  it('refuses a workspace_id of another workspace for an API key (403)', async () => {
    const other = await app.createWorkspace();
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/webhooks', { body: { workspace_id: other.workspaceId, url: PUBLIC_URL } });
      expect(res.status).toBe(403);
    });
  });
});
