/**
 * The internal tRPC endpoint the web interface calls (/api/trpc) runs the same procedures with
 * the same rules as REST; plus the interface-only procedures (inbox, what waits across workspaces,
 * API keys).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { memberships } from '@/db/schema';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { systemTrace } from '@/server/domain/actor';
import { addMember } from '@/server/domain/workspaces/members';
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

describe('what waits across a person’s workspaces', () => {
  /** Adds the person of `member` to another workspace too (the same account). */
  async function alsoIn(member: TestMember, workspaceId: string, role: 'approver' | 'viewer') {
    await app.runtime.db.transaction(async (tx) => {
      const [o] = await tx
        .select({ userId: memberships.userId })
        .from(memberships)
        .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.role, 'owner')));
      const actor = { type: 'system' as const, id: 'system:test', ownerId: o!.userId, workspaceId, trace: systemTrace(randomUUID()) };
      await addMember(tx, actor, { email: member.email, displayName: 'two places', passwordHash: 'not-a-real-hash', role });
    });
  }

  it('counts and lists the pending decisions of every workspace the person belongs to, and of no other', async () => {
    const first = await app.createWorkspace();
    const second = await app.createWorkspace();
    const foreign = await app.createWorkspace();
    const person = await app.member('approver', first.workspaceId);
    await alsoIn(person, second.workspaceId, 'viewer');
    const make = async (ws: typeof first, title: string, body: Record<string, unknown> = {}) =>
      (await app.request('POST', '/decisions', { key: ws.apiKey, body: { workspace_id: ws.workspaceId, title, ...body } })).body.decision;

    const task = (await app.request('POST', '/work', { key: first.apiKey, body: { title: 'waits' } })).body.data.taskId;
    const blocking = await make(first, 'blocking in first', { urgency: 'standard', blocks_task: true, task_id: task });
    const critical = await make(second, 'critical in second', { urgency: 'critical' });
    const decided = await make(first, 'already decided');
    await app.request('POST', `/decisions/${decided.id}/decline`, { session: person.session, body: {} });
    const overdue = await make(first, 'past due', { due_at: new Date(Date.now() + 1000).toISOString() });
    const elsewhere = await make(foreign, 'not theirs', { urgency: 'critical' });
    await app.request('POST', `/decisions/${critical.id}/attention`, { key: second.apiKey, body: {} });
    await new Promise((r) => setTimeout(r, 1100));

    const counts = await query('decisions.acrossWorkspaces', {}, { session: person.session });
    expect(counts.status).toBe(200);
    const primaryId = app.ws.workspaceId;
    expect(counts.body.result.data.workspaces).toEqual([
      { workspace_id: first.workspaceId, pending: 1, blocking: 1 },
      { workspace_id: second.workspaceId, pending: 1, blocking: 0 },
    ]);
    expect(counts.body.result.data.decisions).toEqual([]);

    const all = await query('decisions.acrossWorkspaces', { decisions: true }, { session: person.session });
    const listed = all.body.result.data.decisions;
    expect(listed.map((d: { id: string }) => d.id)).toEqual([critical.id, blocking.id]);
    expect(listed[0]).toMatchObject({
      workspace_id: second.workspaceId,
      title: 'critical in second',
      urgency: 'critical',
      request_count: 1,
    });
    expect(listed[1]).toMatchObject({ workspace_id: first.workspaceId, blocks_task: true, request_count: 0 });
    // Tenant isolation: the workspace the person is not in never appears, nor its decision.
    const text = JSON.stringify(all.body);
    for (const id of [foreign.workspaceId, elsewhere.id, decided.id, overdue.id, primaryId]) expect(text).not.toContain(id);
  });

  it('is for signed-in people only (no API key, no REST route)', async () => {
    expect((await query('decisions.acrossWorkspaces', {}, {})).status).toBe(401);
    const headers = new Headers({ authorization: `Bearer ${app.ws.apiKey}` });
    const url = `http://127.0.0.1:3000/api/trpc/decisions.acrossWorkspaces?input=${encodeURIComponent('{}')}`;
    expect((await trpc(new Request(url, { headers }))).status).toBe(401);
    const document = await app.request('GET', '/openapi.json');
    expect(JSON.stringify(document.body)).not.toMatch(/acrossWorkspaces|across-workspaces/);
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
