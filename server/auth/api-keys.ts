/**
 * API key secrets: how they look, how they are hashed, and how a presented key is resolved to
 * its workspace. A key is `awk_` + 43 base64url characters (256 random bits); only its SHA-256 is
 * stored, and lookup is by that hash, so no stored secret is ever compared character by character.
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Database } from '@/db';
import { compiledSql } from '@/db/compiled';
import { apiKeys } from '@/db/schema';
import { groupQueue, type GroupQueue } from '@/server/group-queue';
import { countHits, usageOf, windowStartOf, type RateLimitUsage } from '@/server/rate-limits';

const API_KEY_PREFIX = 'awk_';
const KEY_PATTERN = /^awk_[A-Za-z0-9_-]{43}$/;

export interface GeneratedKey {
  secret: string;
  prefix: string;
  hash: string;
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function generateApiKey(): GeneratedKey {
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { secret, prefix: secret.slice(0, 12), hash: hashApiKey(secret) };
}

export interface KeyPrincipal {
  keyId: string;
  workspaceId: string;
  ownerUserId: string;
}

/**
 * The keys of a batch of requests and their counted hits in one statement, built once
 * (db/compiled.ts): every authenticated request goes through it. `presented` is a JSON array of
 * { ord, hash, window_start }; a row comes back for each request whose key is live, with the hits
 * its key's counter holds after the whole batch was counted (server/rate-limits.ts countHits).
 */
const keysStatement = compiledSql<
  { presented: string },
  { ord: number; id: string; workspace_id: string; owner_user_id: string; window_start: string; hits: number }
>(
  (p) => sql`with presented as (
          select * from jsonb_to_recordset(${p('presented')}::jsonb) as p(ord int, hash text, window_start timestamptz)
        ), key as (
          select p.ord, p.window_start, k.id, k.workspace_id, k.owner_user_id
            from presented p join api_keys k on k.secret_hash = p.hash and k.revoked_at is null
        ), counted as (${countHits(sql`select 'api_key:' || id::text, window_start, count(*)::int from key group by id, window_start`)})
        select key.ord, key.id, key.workspace_id, key.owner_user_id, key.window_start::text, counted.hits
          from key join counted on counted.bucket = 'api_key:' || key.id::text and counted.window_start = key.window_start`,
);

/** A request waiting for its key: what it presented, and where its answer goes. */
interface Lookup {
  hash: string;
  now: Date;
  settle(found: { row: KeyRow | null; hits: number } | Error): void;
}
type KeyRow = { id: string; workspace_id: string; owner_user_id: string };

/**
 * Looks up a batch of presented keys (server/group-queue.ts): one statement for all of them, in
 * which each key's counter is raised by its requests in the batch. Each request is then given the
 * count it would have had, had they been counted one by one in arrival order, so the limit and the
 * X-RateLimit-Remaining it sees are exact.
 */
async function lookUp(db: Database, batch: Lookup[]): Promise<void> {
  const presented = batch.map((l, ord) => ({ ord, hash: l.hash, window_start: windowStartOf(l.now).toISOString() }));
  const rows = await keysStatement(db, { presented: JSON.stringify(presented) });
  const byOrd = new Map(rows.map((r) => [r.ord, r]));
  // Requests of one counter, in arrival order: the first of n had the counter's total - n + 1.
  const seen = new Map<string, number>();
  const sizes = new Map<string, number>();
  for (const r of rows) sizes.set(`${r.id} ${r.window_start}`, (sizes.get(`${r.id} ${r.window_start}`) ?? 0) + 1);
  batch.forEach((lookup, ord) => {
    const row = byOrd.get(ord);
    if (!row) return lookup.settle({ row: null, hits: 0 });
    const counter = `${row.id} ${row.window_start}`;
    const rank = (seen.get(counter) ?? 0) + 1;
    seen.set(counter, rank);
    lookup.settle({ row, hits: Number(row.hits) - sizes.get(counter)! + rank });
  });
}

/** Per database (tests run several servers in a process), one queue of key lookups. */
const lookupsOf = new WeakMap<Database, GroupQueue<Lookup>>();

function lookupQueue(db: Database): GroupQueue<Lookup> {
  let queue = lookupsOf.get(db);
  if (!queue)
    lookupsOf.set(
      db,
      (queue = groupQueue<Lookup>({
        run: (batch) => lookUp(db, batch),
        fail: (lookup, error) => lookup.settle(error instanceof Error ? error : new Error(String(error))),
        max: 256,
      })),
    );
  return queue;
}

/** `last_used_at` is written at most once a minute per key per process: it is a hint, not a hot-path write. */
const LAST_USED_GRANULARITY_MS = 60_000;
const lastTouched = new Map<string, number>();

export interface AuthenticatedKey extends KeyPrincipal {
  /** This request counted in the key's rate-limit window (the caller decides what exceeding means). */
  usage: RateLimitUsage;
}

/**
 * The workspace and owner behind a presented key, or null when the key is malformed, unknown or
 * revoked. The same statement counts the request in the key's rate-limit bucket, so the limiter
 * adds no round trip to an authenticated request; an unknown key counts nowhere. Requests that
 * arrive while a lookup is in the database are looked up together in the next one: under load one
 * statement (and one COMMIT of the counters) serves many requests, not one each.
 */
export async function authenticateApiKey(
  db: Database,
  presented: string,
  limitPerMinute: number,
  now = new Date(),
): Promise<AuthenticatedKey | null> {
  if (!KEY_PATTERN.test(presented)) return null;
  const found = await new Promise<{ row: KeyRow | null; hits: number } | Error>((settle) =>
    lookupQueue(db).push({ hash: hashApiKey(presented), now, settle }),
  );
  if (found instanceof Error) throw found;
  const { row, hits } = found;
  if (!row) return null;
  const ms = now.getTime();
  if ((lastTouched.get(row.id) ?? 0) + LAST_USED_GRANULARITY_MS < ms) {
    lastTouched.set(row.id, ms);
    const cutoff = new Date(ms - LAST_USED_GRANULARITY_MS);
    await db
      .update(apiKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(apiKeys.id, row.id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, cutoff))));
  }
  return {
    keyId: row.id,
    workspaceId: row.workspace_id,
    ownerUserId: row.owner_user_id,
    usage: usageOf(limitPerMinute, hits, now),
  };
}
