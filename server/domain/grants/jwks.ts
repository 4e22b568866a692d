/**
 * A workspace's public grant keys as a JWKS (RFC 7517, OKP keys of RFC 8037): what a tool server
 * needs to check a grant's signature offline. Every key that may still verify a grant: the current
 * one, and those retired less than a grant's longest life ago (a grant signed just before a
 * rotation lives that long at most). Grant keys only (server/keys/grant-keys.ts): no key here is
 * one of the checkpoint keys GET /ledger/keys lists, but for the checkpoint keys that signed
 * grants before grants had keys of their own, served under their old ids until those grants have
 * expired (docs/contract.md §4.14).
 */
import type { Executor } from '@/db';
import { servedGrantKeys } from '@/server/keys/grant-keys';
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
  const rows = await servedGrantKeys(db, workspaceId, new Date(now.getTime() - MAX_GRANT_TTL_SECONDS * 1000));
  return {
    keys: rows.map((r) => ({ kty: 'OKP', crv: 'Ed25519', x: r.publicKey.toString('base64url'), kid: r.kid, alg: 'EdDSA', use: 'sig' })),
  };
}
