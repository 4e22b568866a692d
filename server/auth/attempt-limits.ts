/**
 * Limits on guessing what a human holds: passwords at sign-in (per account and per client address)
 * and the tokens of invitation and setup links (per client address). Counted in PostgreSQL (table
 * attempt_counters), so every instance serving the database shares the counts.
 *
 * An attempt is counted before the secret is checked, in the same statement that reads the count:
 * a guesser firing a hundred requests at once gets `max` checks, not a hundred, and a refused
 * attempt costs no password hash at all. A success then gives its attempt back: the account's
 * count starts again from zero, and the address's is lowered by one, so an office behind one
 * address is not locked out by its own people signing in.
 *
 * A window opens with the first attempt after the last one ended and lasts `windowMinutes`; within
 * it, attempts past `max` are refused until it ends (the answer says how long that is).
 */
import { sql } from 'drizzle-orm';
import { query, type Executor } from '@/db';
import { AppError } from '@/server/errors';
import { plural } from '@/server/words';

export interface AttemptLimits {
  /** Attempts allowed in one window (SIGN_IN_MAX_ATTEMPTS). */
  max: number;
  /** Length of a window in minutes (SIGN_IN_WINDOW_MINUTES). */
  windowMinutes: number;
}

export const accountBucket = (email: string) => `sign_in:account:${email.trim().toLowerCase()}`;
export const addressBucket = (address: string) => `sign_in:address:${address}`;
export const tokenBucket = (address: string) => `token:address:${address}`;

export interface AttemptVerdict {
  allowed: boolean;
  /** When refused: whole seconds until the fullest bucket's window ends. */
  retryAfterSeconds: number;
}

/** Counts one attempt in every bucket and says whether it may go ahead. */
export async function countAttempt(
  db: Executor,
  buckets: readonly string[],
  limits: AttemptLimits,
  now = new Date(),
): Promise<AttemptVerdict> {
  const windowStartsAfter = new Date(now.getTime() - limits.windowMinutes * 60_000).toISOString();
  const at = now.toISOString();
  const rows = sql.join(
    buckets.map((b) => sql`(${b}::text, ${at}::timestamptz, 1)`),
    sql`, `,
  );
  // A window that ended starts again at this attempt; the old values on the right of SET are the
  // row's before this statement, whatever the order of the assignments.
  const counted = await query<{ attempts: number; window_start: string | Date }>(
    db,
    sql`insert into attempt_counters (bucket, window_start, attempts) values ${rows}
        on conflict (bucket) do update set
          attempts = case when attempt_counters.window_start <= ${windowStartsAfter}::timestamptz then 1
                          else attempt_counters.attempts + 1 end,
          window_start = case when attempt_counters.window_start <= ${windowStartsAfter}::timestamptz then excluded.window_start
                              else attempt_counters.window_start end
        returning attempts, window_start`,
  );
  let retryAfterMs = 0;
  for (const row of counted) {
    if (Number(row.attempts) <= limits.max) continue;
    const ends = new Date(row.window_start).getTime() + limits.windowMinutes * 60_000;
    retryAfterMs = Math.max(retryAfterMs, ends - now.getTime());
  }
  return { allowed: retryAfterMs === 0, retryAfterSeconds: retryAfterMs === 0 ? 0 : Math.max(1, Math.ceil(retryAfterMs / 1000)) };
}

/**
 * A success: the buckets in `reset` start again from zero, and those in `giveBack` get this
 * attempt back.
 */
export async function settleSuccess(db: Executor, reset: readonly string[], giveBack: readonly string[]): Promise<void> {
  const list = (values: readonly string[]) =>
    values.length === 0
      ? sql`array[]::text[]`
      : sql`array[${sql.join(
          values.map((v) => sql`${v}`),
          sql`, `,
        )}]::text[]`;
  await query(
    db,
    sql`with reset as (delete from attempt_counters where bucket = any(${list(reset)}) returning 1)
        update attempt_counters set attempts = greatest(attempts - 1, 0) where bucket = any(${list(giveBack)})`,
  );
}

/** "Too many attempts", with the minutes to wait said plainly (and Retry-After in seconds). */
export function tooManyAttempts(verdict: AttemptVerdict, what: string): AppError {
  const minutes = Math.max(1, Math.ceil(verdict.retryAfterSeconds / 60));
  return new AppError(
    'rate_limited',
    `Too many ${what}. Try again in ${plural(minutes, 'minute')}.`,
    {},
    { retryAfter: verdict.retryAfterSeconds, headers: { 'Retry-After': String(verdict.retryAfterSeconds) } },
  );
}

/** Deletes up to `limit` counters whose window ended (the retention job, server/retention.ts). */
export async function pruneAttemptCounters(db: Executor, limits: AttemptLimits, now = new Date(), limit = 1000): Promise<number> {
  const before = new Date(now.getTime() - limits.windowMinutes * 60_000).toISOString();
  const [row] = await query<{ deleted: number | string }>(
    db,
    sql`with gone as (
          delete from attempt_counters where bucket in (
            select bucket from attempt_counters where window_start <= ${before}::timestamptz limit ${limit})
          returning 1)
        select count(*) as deleted from gone`,
  );
  return Number(row?.deleted ?? 0);
}
