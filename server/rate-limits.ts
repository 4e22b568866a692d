/**
 * Rate limits: fixed one-minute windows counted in PostgreSQL (table rate_limit_counters), so every
 * instance serving the same database shares the counts. Two buckets exist:
 *
 * - `api_key:<key id>`: every authenticated API-key request to /api/v1 (RATE_LIMIT_API_PER_MIN);
 *   counted in the same statement that resolves the key (server/auth/api-keys.ts), so limiting
 *   costs no extra round trip;
 * - `validator:<client address>`: the public receipt validator (RATE_LIMIT_VALIDATOR_PER_MIN).
 *
 * A window is [minute start, next minute start) on the instance's clock; Retry-After is the time
 * left in it, rounded up. Fixed windows (like GitHub's) let a client spend its budget twice across
 * a window boundary; in exchange one counter row answers every question, in one statement.
 */
import type { HeaderReader } from '@/server/http/exchange';
import { isIP } from 'node:net';
import { sql, type SQL } from 'drizzle-orm';
import { query, type Executor } from '@/db';
import { AppError } from './errors';

export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Where a request stands in its bucket's current window. */
export interface RateLimitUsage {
  limit: number;
  /** Requests counted in this window, this one included. */
  hits: number;
  /** When the window ends (the counter starts again from zero). */
  resetAt: Date;
}

export function windowStartOf(now: Date): Date {
  return new Date(Math.floor(now.getTime() / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS);
}

export function usageOf(limit: number, hits: number, now: Date): RateLimitUsage {
  return { limit, hits, resetAt: new Date(windowStartOf(now).getTime() + RATE_LIMIT_WINDOW_MS) };
}

export const isExceeded = (u: RateLimitUsage) => u.hits > u.limit;

/** Whole seconds until the window ends, at least 1 (what Retry-After and error.retryAfter say). */
export function secondsToReset(u: RateLimitUsage, now: Date): number {
  return Math.max(1, Math.ceil((u.resetAt.getTime() - now.getTime()) / 1000));
}

/**
 * The headers every limited response carries, success or not (the names GitHub and many others
 * use): the limit, what is left of it in this window, and when the window resets (epoch seconds).
 */
export function rateLimitHeaders(u: RateLimitUsage): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(u.limit),
    'X-RateLimit-Remaining': String(Math.max(0, u.limit - u.hits)),
    'X-RateLimit-Reset': String(Math.floor(u.resetAt.getTime() / 1000)),
  };
}

/** The 429 for a request over its limit, with the seconds left in the window. */
export function rateLimitedError(u: RateLimitUsage, now: Date, what: string): AppError {
  const retryAfter = secondsToReset(u, now);
  return new AppError(
    'rate_limited',
    `More than ${u.limit} requests a minute ${what}. Retry in ${retryAfter} s.`,
    {},
    {
      retryAfter,
      headers: rateLimitHeaders(u),
    },
  );
}

/**
 * The statement that counts requests: `counts` yields (bucket text, window_start timestamptz,
 * hits int) rows, one per bucket and window, and each is added to its counter; it returns every
 * counter it touched (bucket, window_start, hits) as it stands after. A caller can count in buckets
 * it resolves in the same statement (the API keys of a batch of requests, server/auth/api-keys.ts).
 * Every hit is written, including those over the limit: a client that keeps hammering stays limited
 * until the window ends.
 */
export function countHits(counts: SQL): SQL {
  return sql`insert into rate_limit_counters (bucket, window_start, hits)
    select c.bucket, c.window_start, c.hits from (${counts}) as c(bucket, window_start, hits)
    on conflict (bucket, window_start) do update set hits = rate_limit_counters.hits + excluded.hits
    returning bucket, window_start, hits`;
}

/** Counts one request in `bucket` and says where it stands. Throws when the store cannot answer. */
export async function hit(db: Executor, bucket: string, limit: number, now = new Date()): Promise<RateLimitUsage> {
  const counted = countHits(sql`select ${bucket}::text, ${windowStartOf(now).toISOString()}::timestamptz, 1`);
  const [row] = await query<{ hits: number }>(db, counted);
  if (!row) throw new Error('rate limit counter returned no row');
  return usageOf(limit, Number(row.hits), now);
}

/**
 * Deletes up to `limit` windows that ended (the retention job, server/retention.ts, calls it until
 * fewer come back). The previous window is kept too: an instance whose clock runs a little behind
 * may still be counting in it.
 */
export async function pruneRateLimitCounters(db: Executor, now = new Date(), limit = 1000): Promise<number> {
  const before = new Date(windowStartOf(now).getTime() - RATE_LIMIT_WINDOW_MS);
  const [row] = await query<{ deleted: number | string }>(
    db,
    sql`with gone as (
          delete from rate_limit_counters where (bucket, window_start) in (
            select bucket, window_start from rate_limit_counters
             where window_start < ${before.toISOString()}::timestamptz limit ${limit})
          returning 1)
        select count(*) as deleted from gone`,
  );
  return Number(row?.deleted ?? 0);
}

/**
 * The client address a request came from, read from X-Forwarded-For. The service's own HTTP server
 * (scripts/serve.mjs) appends the peer address of every connection to that header, as a reverse
 * proxy does, so the last entry is always the address that connected to us. With `trustedHops`
 * proxies in front (TRUSTED_PROXY_HOPS), the address is that many entries further left: what the
 * outermost trusted proxy saw. Anything further left was written by the client and is ignored.
 */
export function clientAddress(headers: HeaderReader, trustedHops: number): string {
  const chain = (headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (chain.length === 0) return 'unknown';
  return addressBucket(chain[Math.max(0, chain.length - 1 - trustedHops)]!);
}

/**
 * The bucket of an address: an IPv4 address as it is; an IPv6 address by its /64 network (one
 * host is usually given a whole /64, so counting single addresses would give it 2^64 budgets);
 * anything that is not an address (a proxy wrote something odd) as one shared bucket.
 */
function addressBucket(entry: string): string {
  let address = entry.toLowerCase();
  // IPv4-mapped IPv6 (::ffff:127.0.0.1) is the same client as its IPv4 form.
  address = address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
  const kind = isIP(address);
  if (kind === 4) return address;
  if (kind !== 6) return 'not-an-address';
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, without leading zeros. */
function expandIPv6(address: string): string[] {
  let text = address.split('%')[0]!;
  // A trailing dotted IPv4 part (::1.2.3.4) is two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, v4.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}
