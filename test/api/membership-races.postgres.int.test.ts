/**
 * Races over who belongs to a workspace, lined up with a lock held by another session (PostgreSQL
 * only: a race needs two sessions).
 *
 * - Two invitations for one email, accepted by someone new at the same moment: both find no account
 *   and both insert one; the loser's insert meets the winner's email. It answers 409 conflict, not
 *   500, and nothing of the failed insert (the new user's password hash among its parameters)
 *   reaches a log line.
 * - An owner demoted while a key of theirs is being made: the key is refused (a key never outranks
 *   its owner's role, and demotion revokes the keys an owner made).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { query } from '@/db';
import { startTestApp, type TestApp } from '../support/app';
import { holdLedgerHead, holdTableWrites } from '../support/held-lock';
import { internalClient } from '../support/internal';
import { capturedLogLines } from '../support/log-capture';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

/** How many sessions of this database wait for a lock. */
async function lockWaiters(): Promise<number> {
  const [row] = await query<{ n: number }>(
    app.runtime.db,
    sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
  );
  return row!.n;
}

it('the second of two joins racing for one email answers 409 conflict, and logs no parameter', async () => {
  const api = internalClient(app.runtime);
  const email = 'racer@example.com';
  const tokens: string[] = [];
  for (const ws of [app.ws, await app.createWorkspace()]) {
    const owner = await app.member('owner', ws.workspaceId);
    const made = await api.mutate('members.invite', { workspace_id: ws.workspaceId, email, role: 'viewer' }, { session: owner.session });
    expect(made.status).toBe(200);
    tokens.push(new URL(made.data.link).pathname.split('/').pop()!);
  }

  // Both joins read "no account" and then wait at their insert, so that they insert together.
  const held = await holdTableWrites(app.runtime.databaseUrl!, 'users');
  const joins = tokens.map((token, i) =>
    api.mutate(
      'account.joinWithInvitation',
      { token, display_name: 'Racer', password: 'a long enough password' },
      { address: `10.9.0.${i}` },
    ),
  );
  try {
    await expect.poll(lockWaiters, { timeout: 4_000, interval: 20 }).toBe(2);
  } finally {
    await held.release();
  }
  const answers = await Promise.all(joins);
  expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
  expect(answers.find((a) => a.status === 409)!.code).toBe('conflict');

  const errors = capturedLogLines().filter((l) => l.level === 'error');
  expect(errors).toEqual([]);
  expect(JSON.stringify(capturedLogLines())).not.toMatch(/argon2|racer@example\.com/);
});

it('a key being made for an owner demoted meanwhile is refused, and nothing is written', async () => {
  const api = internalClient(app.runtime);
  const ws = await app.createWorkspace();
  const former = await app.member('owner', ws.workspaceId);
  const events = async () =>
    (
      await query<{ n: number }>(app.runtime.db, sql`select count(*)::int as n from ledger_events where workspace_id = ${ws.workspaceId}`)
    )[0]!.n;
  const before = await events();
  // The request has read its session (an owner) and waits for the workspace's lock; the demotion commits first.
  const head = await holdLedgerHead(app.runtime.databaseUrl!, ws.workspaceId);
  const making = api.mutate('apiKeys.create', { workspace_id: ws.workspaceId, name: 'made too late' }, { session: former.session });
  try {
    await expect.poll(lockWaiters, { timeout: 4_000, interval: 20 }).toBe(1);
    await query(
      app.runtime.db,
      sql`update memberships set role = 'viewer' where workspace_id = ${ws.workspaceId} and user_id = ${former.userId}`,
    );
  } finally {
    await head.release();
  }
  const made = await making;
  expect(made.status).toBe(403);
  expect(made.code).toBe('forbidden');
  expect(await events()).toBe(before);
  const keys = await query<{ n: number }>(
    app.runtime.db,
    sql`select count(*)::int as n from api_keys where owner_user_id = ${former.userId}`,
  );
  expect(keys[0]!.n).toBe(0);
});
