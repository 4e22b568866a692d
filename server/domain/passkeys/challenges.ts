/**
 * WebAuthn challenges, each kept until it is answered or five minutes pass, and taken once: a
 * replayed answer finds none. Expired rows go with the retention job (server/retention.ts).
 *
 * A person holds at most MAX_OPEN_CHALLENGES at once: asking for one more drops their oldest
 * (its answer is then refused like an expired one's). Dropping rather than refusing keeps the
 * newest ceremony working, the one the person is looking at (a retry, a second tab), while a
 * session asking in a loop writes no more than five rows.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import { query, type Executor, type Tx } from '@/db';
import { webauthnChallenges } from '@/db/schema';
import { AppError } from '@/server/errors';

const CHALLENGE_TTL_MS = 5 * 60_000;

/** Open (unexpired, unanswered) challenges one person may hold. */
const MAX_OPEN_CHALLENGES = 5;

type Purpose = (typeof webauthnChallenges.$inferSelect)['purpose'];

export async function keepChallenge(
  tx: Tx,
  purpose: Purpose,
  userId: string | null,
  challenge: string,
  statement: Record<string, unknown> | null = null,
): Promise<string> {
  const id = randomUUID();
  // One at a time per person, so that two requests at once cannot both keep five others.
  if (userId !== null) await query(tx, sql`select 1 from users where id = ${userId} for no key update`);
  await tx
    .insert(webauthnChallenges)
    .values({ id, purpose, userId, challenge, statement, expiresAt: new Date(Date.now() + CHALLENGE_TTL_MS) });
  if (userId !== null) {
    await query(
      tx,
      sql`delete from webauthn_challenges
           where user_id = ${userId} and id <> ${id}
             and id not in (select id from webauthn_challenges
                             where user_id = ${userId} and id <> ${id} and expires_at > now()
                             order by expires_at desc, id desc limit ${MAX_OPEN_CHALLENGES - 1})`,
    );
  }
  return id;
}

/** The challenge `id` for `purpose` (and `userId`, or nobody's), removed; 400 when there is none to take. */
export async function takeChallenge(tx: Tx, id: string, purpose: Purpose, userId: string | null) {
  const [row] = await tx
    .delete(webauthnChallenges)
    .where(
      and(
        eq(webauthnChallenges.id, id),
        eq(webauthnChallenges.purpose, purpose),
        userId === null ? isNull(webauthnChallenges.userId) : eq(webauthnChallenges.userId, userId),
        gt(webauthnChallenges.expiresAt, sql`now()`),
      ),
    )
    .returning();
  if (!row) {
    const message = 'That passkey challenge is unknown, used or expired: ask for a new one.';
    throw new AppError('validation_failed', message, { issues: [{ path: 'passkey.challenge_id', message }] });
  }
  return row;
}

/** Removes up to `limit` challenges past their time, oldest first (the retention job): the number removed. */
export async function pruneChallenges(db: Executor, now = new Date(), limit = 1000): Promise<number> {
  const [row] = await query<{ deleted: number | string }>(
    db,
    sql`with gone as (
          delete from webauthn_challenges where id in (
            select id from webauthn_challenges where expires_at < ${now.toISOString()}::timestamptz order by expires_at limit ${limit})
          returning 1)
        select count(*) as deleted from gone`,
  );
  return Number(row?.deleted ?? 0);
}
