/**
 * Teams: workspaces (GET /workspace, creating one, names unique whatever the case), members and
 * invitations (owners only, single use, 7 days, only hashes kept, no secret in the ledger), the
 * last-owner rule, and removal taking effect at the member's next request. Both engines.
 */
import { randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { invitations, memberships } from '@/db/schema';
import { encodeSession } from '@/server/auth/session';
import { hashToken } from '@/server/domain/workspaces/invitations';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { internalClient } from '../support/internal';

let app: TestApp;
let api: ReturnType<typeof internalClient>;
let owner: TestMember;
beforeAll(async () => {
  app = await startTestApp();
  api = internalClient(app.runtime);
  owner = await app.member('owner');
});
afterAll(async () => {
  await app?.close();
});

/** Every ledger event of every workspace as text, to look for secrets in. */
async function allEventsText(): Promise<string> {
  const rows = await query<{ e: unknown }>(app.runtime.db, sql`select row_to_json(l) as e from ledger_events l`);
  return JSON.stringify(rows);
}

async function eventsOf(workspaceId: string, type: string) {
  return query<{ payload: any; actor_type: string; actor_id: string }>(
    app.runtime.db,
    sql`select coalesce(payload, payload_text::jsonb) as payload, actor_type, actor_id from ledger_events where workspace_id = ${workspaceId} and event_type = ${type} order by sequence`,
  );
}

const tokenOf = (link: string) => new URL(link).pathname.split('/').pop()!;

async function invite(email: string, role: string, workspaceId = app.ws.workspaceId, who = owner) {
  const res = await api.mutate('members.invite', { workspace_id: workspaceId, email, role }, { session: who.session });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { ...res.data, token: tokenOf(res.data.link) } as { invitation: any; link: string; token: string; email: any };
}

async function join(token: string, name = 'New Person', password = 'a long enough password', address = '10.0.0.1') {
  return api.mutate('account.joinWithInvitation', { token, display_name: name, password }, { address });
}

describe('GET /workspace', () => {
  it('answers an API key with its workspace and the key itself (never the secret)', async () => {
    const res = await app.request('GET', '/workspace');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: app.ws.workspaceId,
      name: 'primary',
      api_key: { id: app.ws.apiKeyId, name: 'test key', prefix: app.ws.apiKey.slice(0, 12) },
      role: null,
    });
    expect(res.body.data.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(res.text).not.toContain(app.ws.apiKey);
  });

  it('answers a signed-in human with the workspace they name and their role; another workspace is 403', async () => {
    const approver = await app.member('approver');
    const res = await app.request('GET', `/workspace?workspace_id=${app.ws.workspaceId}`, { session: approver.session });
    expect(res.body.data).toMatchObject({ id: app.ws.workspaceId, role: 'approver', api_key: null });
    const other = await app.createWorkspace();
    const refused = await app.request('GET', `/workspace?workspace_id=${other.workspaceId}`, { session: approver.session });
    expect(refused.status).toBe(403);
    const keyElsewhere = await app.request('GET', `/workspace?workspace_id=${other.workspaceId}`);
    expect(keyElsewhere.status).toBe(403);
  });
});

describe('creating workspaces', () => {
  it('a signed-in user creates one and is its owner, recorded in its own ledger as their act', async () => {
    const name = `Team ${randomUUID().slice(0, 6)}`;
    const res = await api.mutate('workspaces.create', { name: `  ${name} ` }, { session: owner.session });
    expect(res.status).toBe(200);
    expect(res.data.name).toBe(name);
    const [m] = await app.runtime.db.select().from(memberships).where(eq(memberships.workspaceId, res.data.id));
    expect(m).toMatchObject({ userId: owner.userId, role: 'owner' });
    const created = await eventsOf(res.data.id, 'workspace.created');
    expect(created).toEqual([expect.objectContaining({ actor_type: 'human', actor_id: owner.userId, payload: { name } })]);
    // The Inbox came with it.
    const inbox = await query(app.runtime.db, sql`select 1 from initiatives where workspace_id = ${res.data.id} and title = 'Inbox'`);
    expect(inbox).toHaveLength(1);
  });

  it('names are unique whatever their case, 1 to 100 characters; a refused name writes nothing', async () => {
    const name = `Acme-${randomUUID().slice(0, 6)}`;
    expect((await api.mutate('workspaces.create', { name }, { session: owner.session })).status).toBe(200);
    const before = await app.counts();
    const taken = await api.mutate('workspaces.create', { name: name.toUpperCase() }, { session: owner.session });
    expect(taken.status).toBe(409);
    expect(taken.code).toBe('conflict');
    // The workspace that holds the name, as it is spelled, not what was typed.
    expect(taken.body.error.message).toBe(`A workspace named "${name}" already exists. Choose another name.`);
    for (const bad of ['', '   ', 'x'.repeat(101), 'tab\there', 'bell\u0007', 'del\u007f']) {
      const res = await api.mutate('workspaces.create', { name: bad }, { session: owner.session });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect(await app.counts()).toEqual(before);
  });

  it('two creators racing for one name: one workspace, the other gets 409', async () => {
    const name = `race-${randomUUID().slice(0, 6)}`;
    const other = await app.member('viewer');
    const results = await Promise.all([
      api.mutate('workspaces.create', { name }, { session: owner.session }),
      api.mutate('workspaces.create', { name: name.toUpperCase() }, { session: other.session }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const rows = await query(app.runtime.db, sql`select 1 from workspaces where lower(name) = ${name}`);
    expect(rows).toHaveLength(1);
  });
});

describe('invitations', () => {
  it('only owners invite; the link is shown once, kept as a hash, and never in the ledger', async () => {
    const approver = await app.member('approver');
    const denied = await api.mutate(
      'members.invite',
      { workspace_id: app.ws.workspaceId, email: 'x@test.local', role: 'viewer' },
      { session: approver.session },
    );
    expect(denied.status).toBe(403);

    const made = await invite('Invitee@Test.Local', 'approver');
    expect(made.invitation).toMatchObject({ email: 'invitee@test.local', role: 'approver', state: 'pending' });
    expect(made.email).toEqual({ sent: false, reason: 'not_configured' });
    expect(made.token).toMatch(/^awi_[A-Za-z0-9_-]{43}$/);
    const [row] = await app.runtime.db.select().from(invitations).where(eq(invitations.id, made.invitation.id));
    expect(row!.tokenHash).toBe(hashToken(made.token));
    expect(JSON.stringify(row)).not.toContain(made.token);
    const days = (row!.expiresAt.getTime() - row!.createdAt.getTime()) / 86_400_000;
    expect(days).toBe(7);
    // Listed for owners without the token.
    const list = await api.query('members.list', { workspace_id: app.ws.workspaceId }, { session: owner.session });
    expect(list.data.invitations.map((i: any) => i.email)).toContain('invitee@test.local');
    expect(JSON.stringify(list.body)).not.toContain(made.token);

    const joined = await join(made.token, 'Ivy Invitee');
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    expect(joined.data).toMatchObject({ workspace_id: app.ws.workspaceId, email: 'invitee@test.local', role: 'approver' });
    const text = await allEventsText();
    expect(text).not.toContain(made.token);
    expect(text).not.toContain(hashToken(made.token));
    expect(await eventsOf(app.ws.workspaceId, 'invitation.created')).toContainEqual(
      expect.objectContaining({ payload: expect.objectContaining({ email: 'invitee@test.local', role: 'approver' }) }),
    );
    const accepted = await eventsOf(app.ws.workspaceId, 'invitation.accepted');
    expect(accepted.at(-1)).toMatchObject({ actor_type: 'human', payload: { email: 'invitee@test.local', role: 'approver' } });
  });

  it('a link works once: the second use is 404 and writes nothing', async () => {
    const made = await invite(`once-${randomUUID().slice(0, 6)}@test.local`, 'viewer');
    expect((await join(made.token)).status).toBe(200);
    const before = await app.counts();
    const again = await join(made.token, 'Someone Else');
    expect(again.status).toBe(404);
    expect(again.body.error.message).toContain('not valid');
    expect((await api.query('account.invitation', { token: made.token }, { address: '10.0.0.2' })).status).toBe(404);
    expect(await app.counts()).toEqual(before);
  });

  it('two people racing with one link: one joins', async () => {
    const made = await invite(`race-${randomUUID().slice(0, 6)}@test.local`, 'viewer');
    const results = await Promise.all([join(made.token, 'A', undefined, '10.0.1.1'), join(made.token, 'B', undefined, '10.0.1.2')]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 404]);
  });

  it('expires after 7 days; a revoked or replaced link is dead; the preview shows what it offers', async () => {
    const expiring = await invite(`late-${randomUUID().slice(0, 6)}@test.local`, 'viewer');
    const preview = await api.query('account.invitation', { token: expiring.token }, { address: '10.0.0.3' });
    expect(preview.data).toMatchObject({ workspace: { id: app.ws.workspaceId, name: 'primary' }, role: 'viewer', account_exists: false });
    await app.runtime.db
      .update(invitations)
      .set({ createdAt: new Date(Date.now() - 8 * 86_400_000), expiresAt: new Date(Date.now() - 86_400_000) })
      .where(eq(invitations.id, expiring.invitation.id));
    expect((await join(expiring.token)).status).toBe(404);

    const revoked = await invite(`rev-${randomUUID().slice(0, 6)}@test.local`, 'viewer');
    const res = await api.mutate(
      'members.revokeInvitation',
      { workspace_id: app.ws.workspaceId, invitation_id: revoked.invitation.id },
      { session: owner.session },
    );
    expect(res.data).toEqual({ revoked: true });
    expect((await join(revoked.token)).status).toBe(404);

    const email = `twice-${randomUUID().slice(0, 6)}@test.local`;
    const first = await invite(email, 'viewer');
    const second = await invite(email, 'approver');
    expect((await join(first.token)).status).toBe(404);
    expect((await join(second.token)).data.role).toBe('approver');
    const revokedEvents = await eventsOf(app.ws.workspaceId, 'invitation.revoked');
    expect(revokedEvents.map((e) => e.payload.reason)).toEqual(expect.arrayContaining(['revoked', 'replaced']));
  });

  it('an existing account accepts while signed in as that address; another account is refused', async () => {
    const other = await app.createWorkspace();
    const guest = await app.member('viewer', other.workspaceId);
    const made = await invite(guest.email, 'approver');
    expect((await api.query('account.invitation', { token: made.token }, { address: '10.0.0.4' })).data.account_exists).toBe(true);
    // Joining as someone new with an address that has an account is refused (and spends nothing).
    expect((await join(made.token)).status).toBe(409);
    const stranger = await app.member('viewer', other.workspaceId);
    const wrong = await api.mutate('account.acceptInvitation', { token: made.token }, { session: stranger.session });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error.message).toContain(guest.email);
    const ok = await api.mutate('account.acceptInvitation', { token: made.token }, { session: guest.session });
    expect(ok.status).toBe(200);
    const seen = await app.request('GET', `/workspace?workspace_id=${app.ws.workspaceId}`, { session: guest.session });
    expect(seen.body.data.role).toBe('approver');
  });

  it('an address already a member cannot be invited', async () => {
    const member = await app.member('viewer');
    const res = await api.mutate(
      'members.invite',
      { workspace_id: app.ws.workspaceId, email: member.email, role: 'owner' },
      { session: owner.session },
    );
    expect(res.status).toBe(409);
    expect(res.code).toBe('conflict');
  });
});

describe('members', () => {
  it('an owner demoted loses the API keys they made: revoked with the change, in its events, 401 at once', async () => {
    const ws = await app.createWorkspace();
    const boss = await app.member('owner', ws.workspaceId);
    const demoted = await app.member('owner', ws.workspaceId);
    const made = await api.mutate(
      'apiKeys.create',
      { workspace_id: ws.workspaceId, name: 'agent of theirs' },
      { session: demoted.session },
    );
    const key = made.data.secret as string;
    // An owner's key: it manages webhooks and writes work.
    expect((await app.request('POST', '/work', { key, body: { title: 'before' } })).status).toBe(201);
    const hook = await app.request('POST', '/webhooks', { key, body: { url: 'https://93.184.216.34/in' } });
    expect(hook.status).toBe(201);

    const demote = await api.mutate(
      'members.changeRole',
      { workspace_id: ws.workspaceId, user_id: demoted.userId, role: 'viewer' },
      { session: boss.session },
    );
    expect(demote.data).toEqual({ changed: true, revokedKeys: 1 });
    for (const [method, path, body] of [
      ['POST', '/work', { title: 'after' }],
      ['PATCH', `/webhooks/${hook.body.data.id}`, { enabled: false }],
      ['GET', '/webhooks', undefined],
    ] as const) {
      expect((await app.request(method, path, { key, body })).status, `${method} ${path}`).toBe(401);
    }
    // The revocation is recorded with the change that caused it, right after it.
    const events = await query<{ event_type: string; payload: any; sequence: number }>(
      app.runtime.db,
      sql`select event_type, coalesce(payload, payload_text::jsonb) as payload, sequence from ledger_events where workspace_id = ${ws.workspaceId}
          and event_type in ('membership.role_changed', 'api_key.revoked') order by sequence`,
    );
    expect(events.map((e) => [e.event_type, e.payload.reason ?? e.payload.to])).toEqual([
      ['membership.role_changed', 'viewer'],
      ['api_key.revoked', 'owner_demoted'],
    ]);
    expect(events[1]!.sequence).toBe(events[0]!.sequence + 1);
    expect(events[1]!.payload.id).toBe(made.data.id);

    // Made owner again: the key stays revoked, and the boss's keys were never touched.
    await api.mutate(
      'members.changeRole',
      { workspace_id: ws.workspaceId, user_id: demoted.userId, role: 'owner' },
      { session: boss.session },
    );
    expect((await app.request('GET', '/workspace', { key })).status).toBe(401);
    expect((await app.request('GET', '/workspace', { key: ws.apiKey })).status).toBe(200);
  });

  it('a role change and a removal take effect at the member’s next request; their keys go with them', async () => {
    const ws = await app.createWorkspace();
    const boss = await app.member('owner', ws.workspaceId);
    const member = await app.member('approver', ws.workspaceId);
    const key = await api.mutate('apiKeys.create', { workspace_id: ws.workspaceId, name: 'theirs' }, { session: boss.session });
    // Made by the boss, so owned by the boss: hand it to the member to see it revoked with them.
    await query(app.runtime.db, sql`update api_keys set owner_user_id = ${member.userId} where id = ${key.data.id}`);

    const decision = await app.request('POST', '/decisions', { key: ws.apiKey, body: { workspace_id: ws.workspaceId, title: 'rule me' } });
    const demote = await api.mutate(
      'members.changeRole',
      { workspace_id: ws.workspaceId, user_id: member.userId, role: 'viewer' },
      { session: boss.session },
    );
    expect(demote.data).toEqual({ changed: true, revokedKeys: 0 });
    const tried = await api.mutate('decisions.approve', { id: decision.body.decision.id }, { session: member.session });
    expect(tried.status).toBe(403);
    expect(await eventsOf(ws.workspaceId, 'membership.role_changed')).toEqual([
      expect.objectContaining({
        actor_type: 'human',
        actor_id: boss.userId,
        payload: expect.objectContaining({ from: 'approver', to: 'viewer' }),
      }),
    ]);

    const removed = await api.mutate('members.remove', { workspace_id: ws.workspaceId, user_id: member.userId }, { session: boss.session });
    expect(removed.data).toEqual({ revokedKeys: 1 });
    const after = await app.request('GET', `/workspace?workspace_id=${ws.workspaceId}`, { session: member.session });
    expect(after.status).toBe(403);
    expect((await app.request('GET', '/workspace', { key: key.data.secret })).status).toBe(401);
    expect((await eventsOf(ws.workspaceId, 'membership.removed')).map((e) => e.payload.user_id)).toEqual([member.userId]);
  });

  it('the last owner cannot be demoted, removed or leave (409), and nothing is written', async () => {
    const ws = await app.createWorkspace();
    const [only] = await app.runtime.db.select().from(memberships).where(eq(memberships.workspaceId, ws.workspaceId));
    const session = await encodeSession(only!.userId, app.runtime.secrets.auth);
    const before = await app.counts();
    for (const [path, input] of [
      ['members.changeRole', { workspace_id: ws.workspaceId, user_id: only!.userId, role: 'approver' }],
      ['members.remove', { workspace_id: ws.workspaceId, user_id: only!.userId }],
      ['members.leave', { workspace_id: ws.workspaceId }],
    ] as const) {
      const res = await api.mutate(path, input, { session });
      expect(res.status, path).toBe(409);
      expect(res.code).toBe('conflict');
      expect(res.body.error.message).toContain('at least one owner');
    }
    expect(await app.counts()).toEqual(before);
    // With a second owner, the first may leave.
    const second = await app.member('owner', ws.workspaceId);
    expect((await api.mutate('members.leave', { workspace_id: ws.workspaceId }, { session })).status).toBe(200);
    const last = await api.mutate('members.leave', { workspace_id: ws.workspaceId }, { session: second.session });
    expect(last.status).toBe(409);
  });

  it('two owners demoting each other at once: one change lands, the workspace keeps an owner', async () => {
    const ws = await app.createWorkspace();
    const [first] = await app.runtime.db.select().from(memberships).where(eq(memberships.workspaceId, ws.workspaceId));
    const firstSession = await encodeSession(first!.userId, app.runtime.secrets.auth);
    const second = await app.member('owner', ws.workspaceId);
    const results = await Promise.all([
      api.mutate('members.changeRole', { workspace_id: ws.workspaceId, user_id: second.userId, role: 'viewer' }, { session: firstSession }),
      api.mutate(
        'members.changeRole',
        { workspace_id: ws.workspaceId, user_id: first!.userId, role: 'viewer' },
        { session: second.session },
      ),
    ]);
    const statuses = results.map((r) => r.status).sort();
    // Both 200 is impossible (no owner left); one 403 is the loser finding itself demoted first.
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const owners = await app.runtime.db.select().from(memberships).where(eq(memberships.workspaceId, ws.workspaceId));
    expect(owners.filter((m) => m.role === 'owner')).toHaveLength(1);
  });

  it('members are listed with role and last sign-in, owners first; only owners see the list', async () => {
    const list = await api.query('members.list', { workspace_id: app.ws.workspaceId }, { session: owner.session });
    expect(list.status).toBe(200);
    expect(list.data.members[0].role).toBe('owner');
    expect(list.data.members[0]).toHaveProperty('last_sign_in_at');
    const viewer = await app.member('viewer');
    expect((await api.query('members.list', { workspace_id: app.ws.workspaceId }, { session: viewer.session })).status).toBe(403);
  });
});
