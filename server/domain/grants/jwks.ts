/**
 * A workspace's public keys as a JWKS (RFC 7517, OKP keys of RFC 8037): what a tool server needs to
 * check a grant's signature offline. Every key that may still verify a grant: the current one, and
 * those retired less than a grant's longest life ago (a grant signed just before a rotation lives
 * that long at most).
 */
import { and, asc, eq, gt, isNull, or } from 'drizzle-orm';
import type { Executor } from '@/db';
import { ledgerSigningKeys } from '@/db/schema';
import { MAX_GRANT_TTL_SECONDS } from './issue';

export interface Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

export async function workspaceJwks(db: Executor, workspaceId: string, now = new Date()): Promise<{ keys: Jwk[] }> {
  const since = new Date(now.getTime() - MAX_GRANT_TTL_SECONDS * 1000);
  const rows = await db
    .select({ keyId: ledgerSigningKeys.keyId, publicKey: ledgerSigningKeys.publicKey })
    .from(ledgerSigningKeys)
    .where(
      and(eq(ledgerSigningKeys.workspaceId, workspaceId), or(isNull(ledgerSigningKeys.retiredAt), gt(ledgerSigningKeys.retiredAt, since))),
    )
    .orderBy(asc(ledgerSigningKeys.createdAt));
  return {
    keys: rows.map((r) => ({ kty: 'OKP', crv: 'Ed25519', x: r.publicKey.toString('base64url'), kid: r.keyId, alg: 'EdDSA', use: 'sig' })),
  };
}
