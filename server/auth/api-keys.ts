/**
 * API key secrets: how they look, how they are hashed, and how a presented key is resolved to
 * its workspace. A key is `awk_` + 43 base64url characters (256 random bits); only its SHA-256 is
 * stored, and lookup is by that hash, so no stored secret is ever compared character by character.
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, eq, isNull, lt, or } from 'drizzle-orm';
import type { Database } from '@/db';
import { apiKeys } from '@/db/schema';

export const API_KEY_PREFIX = 'awk_';
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

/** `last_used_at` is written at most once a minute per key per process: it is a hint, not a hot-path write. */
const LAST_USED_GRANULARITY_MS = 60_000;
const lastTouched = new Map<string, number>();

/** The workspace and owner behind a presented key, or null when the key is malformed, unknown or revoked. */
export async function authenticateApiKey(db: Database, presented: string): Promise<KeyPrincipal | null> {
  if (!KEY_PATTERN.test(presented)) return null;
  const [row] = await db
    .select({ id: apiKeys.id, workspaceId: apiKeys.workspaceId, ownerUserId: apiKeys.ownerUserId })
    .from(apiKeys)
    .where(and(eq(apiKeys.secretHash, hashApiKey(presented)), isNull(apiKeys.revokedAt)))
    .limit(1);
  if (!row) return null;
  const now = Date.now();
  if ((lastTouched.get(row.id) ?? 0) + LAST_USED_GRANULARITY_MS < now) {
    lastTouched.set(row.id, now);
    const cutoff = new Date(now - LAST_USED_GRANULARITY_MS);
    await db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(and(eq(apiKeys.id, row.id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, cutoff))));
  }
  return { keyId: row.id, workspaceId: row.workspaceId, ownerUserId: row.ownerUserId };
}
