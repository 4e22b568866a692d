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
import { countHit, usageOf, windowStartOf, type RateLimitUsage } from '@/server/rate-limits';

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
 * The key's row and its counted hit in one statement, built once (db/compiled.ts): every
 * authenticated request runs it.
 */
const keyStatement = compiledSql<
  { hash: string; windowStart: string },
  { id: string; workspace_id: string; owner_user_id: string; hits: number }
>(
  (p) => sql`with key as (
          select id, workspace_id, owner_user_id from api_keys
          where secret_hash = ${p('hash')} and revoked_at is null limit 1
        ), counted as (${countHit(sql`select 'api_key:' || id::text from key`, p('windowStart'))})
        select key.id, key.workspace_id, key.owner_user_id, counted.hits from key, counted`,
);

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
 * adds no round trip to an authenticated request; an unknown key counts nowhere.
 */
export async function authenticateApiKey(
  db: Database,
  presented: string,
  limitPerMinute: number,
  now = new Date(),
): Promise<AuthenticatedKey | null> {
  if (!KEY_PATTERN.test(presented)) return null;
  const [row] = await keyStatement(db, { hash: hashApiKey(presented), windowStart: windowStartOf(now).toISOString() });
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
    usage: usageOf(limitPerMinute, Number(row.hits), now),
  };
}
