/**
 * Sign-in that resists guessing, and the first run without the demo. Both engines.
 *
 * - Attempts are limited per account and per client address; past the limit even the right
 *   password is refused, so no password is checked; a success gives the account a fresh count.
 * - Unknown emails and wrong passwords get the same answer.
 * - Invitation and setup tokens are limited per address the same way.
 * - A setup link creates the first account and workspace once, and is dead afterwards.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { hashPassword } from '@/server/auth/passwords';
import { checkSignIn } from '@/server/auth/sign-in';
import { pruneAttemptCounters } from '@/server/auth/attempt-limits';
import { addMember } from '@/server/domain/workspaces/members';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { issueSetupToken, setupLinkIsLive } from '@/server/domain/workspaces/setup';
import { AppError } from '@/server/errors';
import { startTestApp, type TestApp } from '../support/app';
import { createTestRuntime } from '../support/engine';
import { internalClient } from '../support/internal';
import { metricValue } from '../support/metrics';

let app: TestApp;
const PASSWORD = 'correct horse battery staple';
beforeAll(async () => {
  app = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '10', SIGN_IN_WINDOW_MINUTES: '15' });
});
afterAll(async () => {
  await app?.close();
});

/** A member who signs in with PASSWORD. */
async function person(): Promise<string> {
  const email = `p-${randomUUID().slice(0, 8)}@test.local`;
  const passwordHash = await hashPassword(PASSWORD);
  await app.runtime.db.transaction(async (tx) => {
    const actor: Actor = {
      type: 'system',
      id: 'system:test',
      ownerId: app.ws.ownerUserId,
      workspaceId: app.ws.workspaceId,
      trace: systemTrace(randomUUID()),
    };
    await addMember(tx, actor, { email, displayName: 'P', passwordHash, role: 'viewer' });
  });
  return email;
}

const from = (address: string) => new Headers({ 'x-forwarded-for': address });
let nextAddress = 1;
const freshAddress = () => `10.1.${Math.floor(nextAddress / 250)}.${(nextAddress++ % 250) + 1}`;

async function attempt(email: string, password: string, address: string): Promise<'ok' | 'no' | string> {
  try {
    return (await checkSignIn(app.runtime, email, password, from(address))) ? 'ok' : 'no';
  } catch (err) {
    if (err instanceof AppError && err.code === 'rate_limited') return err.message;
    throw err;
  }
}

describe('sign-in limits', () => {
  it('the eleventh attempt on an account within the window is refused, even with the right password, from any address', async () => {
    const email = await person();
    for (let i = 0; i < 10; i++) expect(await attempt(email, `wrong ${i}`, freshAddress())).toBe('no');
    const refused = await attempt(email, PASSWORD, freshAddress());
    expect(refused).toMatch(/^Too many sign-in attempts\. Try again in 1[45] minutes\.$/);
    // Once the window has passed (moved back by hand), the right password works again.
    await query(app.runtime.db, sql`update attempt_counters set window_start = window_start - interval '16 minutes'`);
    expect(await attempt(email, PASSWORD, freshAddress())).toBe('ok');
  });

  it('one address trying many accounts is refused after ten attempts', async () => {
    const address = freshAddress();
    for (let i = 0; i < 10; i++) expect(await attempt(`nobody-${i}-${randomUUID()}@test.local`, 'guess', address)).toBe('no');
    const email = await person();
    expect(await attempt(email, PASSWORD, address)).toMatch(/^Too many sign-in attempts/);
    expect(await attempt(email, PASSWORD, freshAddress())).toBe('ok');
  });

  it('a success gives the account a fresh count, and does not use up its address', async () => {
    const email = await person();
    const address = freshAddress();
    for (let i = 0; i < 9; i++) expect(await attempt(email, 'wrong', address)).toBe('no');
    expect(await attempt(email, PASSWORD, address)).toBe('ok');
    const [account] = await query<{ attempts: number }>(
      app.runtime.db,
      sql`select attempts from attempt_counters where bucket = ${`sign_in:account:${email}`}`,
    );
    expect(account).toBeUndefined();
    // Ten people behind one address signing in rightly are never refused.
    const office = freshAddress();
    for (let i = 0; i < 12; i++) expect(await attempt(await person(), PASSWORD, office)).toBe('ok');
  });

  it('an unknown email and a wrong password get the same answer', async () => {
    const email = await person();
    expect(await attempt(email, 'wrong', freshAddress())).toBe('no');
    expect(await attempt(`ghost-${randomUUID()}@test.local`, 'wrong', freshAddress())).toBe('no');
  });

  it('a hundred guesses at once get ten password checks, not a hundred', async () => {
    const email = await person();
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => attempt(email, i === 99 ? PASSWORD : 'wrong', freshAddress())));
    expect(answers.filter((a) => a === 'no' || a === 'ok')).toHaveLength(10);
  });

  it('the background job forgets windows that have ended', async () => {
    const email = await person();
    await attempt(email, 'wrong', freshAddress());
    await query(app.runtime.db, sql`update attempt_counters set window_start = window_start - interval '1 hour'`);
    expect(await pruneAttemptCounters(app.runtime.db, { max: 10, windowMinutes: 15 })).toBeGreaterThan(0);
    const [left] = await query<{ n: number }>(app.runtime.db, sql`select count(*)::int as n from attempt_counters`);
    expect(Number(left!.n)).toBe(0);
  });
});

describe('link tokens', () => {
  it('ten bad invitation tokens from one address, and the eleventh (even a good one) is refused', async () => {
    const api = internalClient(app.runtime);
    const owner = await app.member('owner');
    const made = await api.mutate(
      'members.invite',
      { workspace_id: app.ws.workspaceId, email: `t-${randomUUID().slice(0, 6)}@test.local`, role: 'viewer' },
      { session: owner.session },
    );
    const good = new URL(made.data.link).pathname.split('/').pop()!;
    const address = freshAddress();
    for (let i = 0; i < 10; i++) {
      const bad = await api.query('account.invitation', { token: `awi_${'x'.repeat(42)}${i}` }, { address });
      expect(bad.status).toBe(404);
    }
    const refused = await api.query('account.invitation', { token: good }, { address });
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/^Too many attempts with invitation or setup links\. Try again in/);
    // Good tokens give their attempt back: one address opening many good links is never refused.
    const other = freshAddress();
    for (let i = 0; i < 12; i++) expect((await api.query('account.invitation', { token: good }, { address: other })).status).toBe(200);
  });
});

describe('link tokens past the limit', () => {
  it('a join or a setup refused by the address’s limit hashes no password (the argon2 work comes after the count)', async () => {
    const api = internalClient(app.runtime);
    const address = freshAddress();
    for (let i = 0; i < 10; i++) {
      const bad = await api.query('account.invitation', { token: `awi_${'z'.repeat(42)}${i}` }, { address });
      expect(bad.status).toBe(404);
    }
    const hashed = await metricValue('aws_password_hashing_total', { operation: 'hash' });
    const refusedBefore = await metricValue('aws_refusals_total', { reason: 'link_attempts_locked' });
    const tries = [
      api.mutate('account.joinWithInvitation', { token: `awi_${'z'.repeat(43)}`, display_name: 'Guess', password: PASSWORD }, { address }),
      api.mutate(
        'account.completeSetup',
        { token: `aws_setup_${'z'.repeat(43)}`, workspace_name: 'Guess', display_name: 'Guess', email: 'g@test.local', password: PASSWORD },
        { address },
      ),
    ];
    for (const refused of await Promise.all(tries)) {
      expect(refused.status).toBe(429);
      expect(refused.code).toBe('rate_limited');
    }
    expect(await metricValue('aws_password_hashing_total', { operation: 'hash' })).toBe(hashed);
    expect(await metricValue('aws_refusals_total', { reason: 'link_attempts_locked' })).toBe(refusedBefore + 2);
    // Within the limit, a join is hashed (and the count says so).
    const within = await api.mutate(
      'account.joinWithInvitation',
      { token: `awi_${'w'.repeat(43)}`, display_name: 'Guess', password: PASSWORD },
      { address: freshAddress() },
    );
    expect(within.status).toBe(404);
    expect(await metricValue('aws_password_hashing_total', { operation: 'hash' })).toBe(hashed + 1);
  });
});

describe('first run without the demo', () => {
  it('a setup link makes the first account and workspace, works once, and no other link is made afterwards', async () => {
    const empty = await createTestRuntime({ SEED_DEMO: 'false' });
    try {
      const api = internalClient(empty);
      const token = (await issueSetupToken(empty.db))!;
      const older = (await issueSetupToken(empty.db))!;
      expect(token).toMatch(/^aws_setup_[A-Za-z0-9_-]{43}$/);
      expect(await setupLinkIsLive(empty.db, token)).toBe(true);
      const [stored] = await query<{ token_hash: string }>(empty.db, sql`select token_hash from setup_tokens limit 1`);
      expect(stored!.token_hash).not.toContain(token.slice(10));

      expect((await api.query('account.setupLink', { token: `aws_setup_${'y'.repeat(43)}` }, { address: '10.9.0.1' })).status).toBe(404);
      expect((await api.query('account.setupLink', { token }, { address: '10.9.0.1' })).data).toEqual({ ok: true });
      const input = { token, workspace_name: 'Acme', display_name: 'Ada Admin', email: 'Ada@Acme.test', password: 'short' };
      const weak = await api.mutate('account.completeSetup', input, { address: '10.9.0.1' });
      expect(weak.status).toBe(400);
      const done = await api.mutate('account.completeSetup', { ...input, password: PASSWORD }, { address: '10.9.0.1' });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.data.email).toBe('ada@acme.test');
      expect(await checkSignIn(empty, 'ada@acme.test', PASSWORD, from('10.9.0.2'))).toMatchObject({ email: 'ada@acme.test' });

      const again = await api.mutate(
        'account.completeSetup',
        { ...input, password: PASSWORD, email: 'eve@acme.test' },
        { address: '10.9.0.1' },
      );
      expect(again.status).toBe(404);
      expect(
        (await api.mutate('account.completeSetup', { ...input, token: older, email: 'eve@acme.test', password: PASSWORD })).status,
      ).toBe(404);
      expect(await setupLinkIsLive(empty.db, token)).toBe(false);
      expect(await issueSetupToken(empty.db)).toBeNull();
      const [count] = await query<{ users: number; workspaces: number; tokens: number }>(
        empty.db,
        sql`select (select count(*)::int from users) as users, (select count(*)::int from workspaces) as workspaces,
                   (select count(*)::int from setup_tokens) as tokens`,
      );
      expect(count).toEqual({ users: 1, workspaces: 1, tokens: 0 });
      const events = await query<{ e: unknown }>(empty.db, sql`select row_to_json(l) as e from ledger_events l`);
      expect(JSON.stringify(events)).not.toContain(token);
    } finally {
      await empty.close();
    }
  });
});
