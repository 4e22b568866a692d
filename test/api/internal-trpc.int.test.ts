/**
 * The internal tRPC endpoint the web interface calls (/api/trpc) runs the same procedures with
 * the same rules as REST; plus the interface-only procedures (inbox, API keys).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { startTestApp, type TestApp, type TestMember } from '../support/app';

let app: TestApp;
let trpc: (req: Request) => Promise<Response>;
let owner: TestMember;
let approver: TestMember;
let viewer: TestMember;
beforeAll(async () => {
  app = await startTestApp();
  trpc = createInternalTrpcHandler(async () => app.runtime);
  owner = await app.member('owner');
  approver = await app.member('approver');
  viewer = await app.member('viewer');
});
afterAll(async () => {
  await app?.close();
});

interface Call {
  session?: string;
  key?: string;
  origin?: string | null;
}

async function mutate(path: string, input: unknown, who: Call) {
  const headers = new Headers({ 'content-type': 'application/json' });
  if (who.session) headers.set('cookie', `next-auth.session-token=${who.session}`);
  if (who.key) headers.set('authorization', `Bearer ${who.key}`);
  if (who.origin !== null) headers.set('origin', who.origin ?? 'http://127.0.0.1:3000');
  const res = await trpc(new Request(`http://127.0.0.1:3000/api/trpc/${path}`, { method: 'POST', headers, body: JSON.stringify(input) }));
  return { status: res.status, body: (await res.json()) as any };
}

async function query(path: string, input: unknown, who: Call) {
  const headers = new Headers();
  if (who.session) headers.set('cookie', `next-auth.session-token=${who.session}`);
  const url = `http://127.0.0.1:3000/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`;
  const res = await trpc(new Request(url, { headers }));
  return { status: res.status, body: (await res.json()) as any };
}

const raise = async (body: Record<string, unknown> = {}) =>
  (await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'via trpc', ...body } })).body.decision;

describe('/api/trpc enforces the REST rules', () => {
  it('takes no API keys at all (they belong at /api/v1, with its limits and idempotency)', async () => {
    const d = await raise();
    const res = await mutate('decisions.approve', { id: d.id }, { key: app.ws.apiKey });
    expect(res.status).toBe(401);
    expect(res.body.error.data.appCode).toBe('unauthorized');
    const create = await mutate('decisions.create', { workspace_id: app.ws.workspaceId, title: 'x' }, { key: app.ws.apiKey });
    expect(create.status).toBe(401);
  });

  it('a viewer cannot rule; cross-site and origin-less writes are refused; an approver can', async () => {
    const d = await raise();
    expect((await mutate('decisions.approve', { id: d.id }, { session: viewer.session })).body.error.data.appCode).toBe('forbidden');
    expect((await mutate('decisions.approve', { id: d.id }, { session: approver.session, origin: 'https://evil.example' })).status).toBe(
      403,
    );
    expect((await mutate('decisions.approve', { id: d.id }, { session: approver.session, origin: null })).status).toBe(403);
    const ok = await mutate('decisions.approve', { id: d.id, note: 'ok' }, { session: approver.session });
    expect(ok.status).toBe(200);
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.status).toBe('approved');
  });

  it('no credential is 401, and errors carry no stack', async () => {
    const res = await mutate('decisions.decline', { id: '00000000-0000-4000-8000-000000000000' }, { origin: null });
    expect(res.status).toBe(401);
    expect(JSON.stringify(res.body)).not.toMatch(/stack|\.ts:\d+/);
  });
});

describe('the inbox', () => {
  it('puts pending first, most urgent then longest waiting, and counts by status and urgency', async () => {
    const ws = await app.createWorkspace();
    const human = await app.member('approver', ws.workspaceId);
    const make = async (title: string, urgency: string) =>
      (await app.request('POST', '/decisions', { key: ws.apiKey, body: { workspace_id: ws.workspaceId, title, urgency } })).body.decision;
    const oldStandard = await make('old standard', 'standard');
    const critical = await make('critical', 'critical');
    const newStandard = await make('new standard', 'standard');
    const done = await make('done', 'critical');
    await app.request('POST', `/decisions/${done.id}/decline`, { session: human.session, body: {} });

    const res = await query('decisions.inbox', { workspace_id: ws.workspaceId }, { session: human.session });
    expect(res.status).toBe(200);
    const { decisions, counts, role } = res.body.result.data;
    expect(role).toBe('approver');
    expect(decisions.map((d: { id: string }) => d.id)).toEqual([critical.id, oldStandard.id, newStandard.id, done.id]);
    expect(counts.byStatus).toMatchObject({ pending: 3, declined: 1 });
    expect(counts.pendingByUrgency).toMatchObject({ critical: 1, standard: 2 });

    const filtered = await query('decisions.inbox', { workspace_id: ws.workspaceId, status: ['declined'] }, { session: human.session });
    expect(filtered.body.result.data.decisions.map((d: { id: string }) => d.id)).toEqual([done.id]);
    const outsider = await query('decisions.inbox', { workspace_id: ws.workspaceId }, { session: owner.session });
    expect(outsider.status).toBe(403);
  });
});

describe('API keys in the interface', () => {
  it('an owner creates (secret once), lists by prefix and revokes; others may not', async () => {
    const created = await mutate('apiKeys.create', { workspace_id: app.ws.workspaceId, name: 'ui key' }, { session: owner.session });
    expect(created.status).toBe(200);
    const key = created.body.result.data;
    expect(key.secret).toMatch(/^awk_/);
    expect((await app.request('GET', '/events/stream', { key: key.secret })).status).toBe(200);

    const list = await query('apiKeys.list', { workspace_id: app.ws.workspaceId }, { session: owner.session });
    const row = list.body.result.data.find((k: { id: string }) => k.id === key.id);
    expect(row).toMatchObject({ name: 'ui key', prefix: key.secret.slice(0, 12), revoked_at: null });
    expect(JSON.stringify(list.body)).not.toContain(key.secret);

    for (const who of [approver, viewer]) {
      expect((await query('apiKeys.list', { workspace_id: app.ws.workspaceId }, { session: who.session })).status).toBe(403);
      expect((await mutate('apiKeys.create', { workspace_id: app.ws.workspaceId, name: 'x' }, { session: who.session })).status).toBe(403);
    }

    const revoked = await mutate('apiKeys.revoke', { workspace_id: app.ws.workspaceId, key_id: key.id }, { session: owner.session });
    expect(revoked.body.result.data).toEqual({ revoked: true });
    expect((await app.request('GET', '/events/stream', { key: key.secret })).status).toBe(401);
    const events = await app.request('GET', '/events/stream?type=api_key.revoked&limit=100');
    expect(
      events.body.data.some((e: { aggregateId: string; actorType: string }) => e.aggregateId === key.id && e.actorType === 'human'),
    ).toBe(true);
  });
});
