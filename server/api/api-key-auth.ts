/**
 * How /api/v1 resolves `Authorization: Bearer <key>`: the key's workspace and owner, with the
 * request counted against the key's rate limit (RATE_LIMIT_API_PER_MIN) in the same statement.
 *
 * The transport resolves a presented key once, before it reads the body (server/api/rest.ts), so
 * a key over its limit is refused before the server spends anything on its request and every
 * request it makes (unknown routes and bad bodies included) is counted. An unknown or revoked key
 * is not refused there: the body's form is still checked first, and the 401 comes from
 * `requireKey` where the operation needs a credential.
 */
import { authenticateApiKey, type KeyPrincipal } from '@/server/auth/api-keys';
import { AppError } from '@/server/errors';
import { isExceeded, rateLimitedError, rateLimitHeaders } from '@/server/rate-limits';
import type { Runtime } from '@/server/runtime';
import { countRefusal } from '@/server/metrics';

/** The key in an Authorization header of the form `Bearer <key>`, or null. */
export function bearerToken(header: string | null): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

export interface PresentedKey {
  /** The key's principal; null when the key is unknown or revoked. */
  key: KeyPrincipal | null;
  /** X-RateLimit-* headers for the response (empty for an unknown key: it counts nowhere). */
  headers: Record<string, string>;
}

/**
 * Resolves and counts the bearer key of a request; null when none is presented. Throws 429
 * `rate_limited` when the key is over its limit.
 */
export async function presentKey(runtime: Runtime, authorization: string | null): Promise<PresentedKey | null> {
  const token = bearerToken(authorization);
  if (!token) return null;
  const now = new Date();
  const found = await authenticateApiKey(runtime.db, token, runtime.env.RATE_LIMIT_API_PER_MIN, now);
  if (!found) return { key: null, headers: {} };
  if (isExceeded(found.usage)) {
    countRefusal('api_rate_limit');
    throw rateLimitedError(found.usage, now, 'for this API key');
  }
  const { usage, ...key } = found;
  return { key, headers: rateLimitHeaders(usage) };
}

/** The principal of a presented key: 401 when none was presented or it is unknown or revoked. */
export function requireKey(presented: PresentedKey | null): KeyPrincipal {
  if (!presented) throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>.');
  if (!presented.key) throw new AppError('unauthorized', 'The API key is unknown or revoked.');
  return presented.key;
}
