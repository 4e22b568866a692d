/**
 * A grant's token: a compact JWS (RFC 7515), EdDSA over Ed25519 with the workspace's signing key,
 * whose claims say which decision approved which action, for which target, by whom, until when.
 * A tool server checks it offline against the workspace's JWKS (jwks.ts) with any JOSE library.
 *
 * The token is never stored: it is signed again from the grant's row whenever it is shown. Ed25519
 * signatures are deterministic (RFC 8032) and the header and claims are written in a fixed order
 * here, so the same grant always has the same token, and a presented token is checked by signing
 * the row it names and comparing the two.
 */
import { sign, timingSafeEqual } from 'node:crypto';
import type { Executor } from '@/db';
import type { decisionGrants } from '@/db/schema';
import { signingKeyById, type SigningSettings } from '@/server/ledger/checkpoints';

export type GrantRow = typeof decisionGrants.$inferSelect;

/** The JWS `typ` (RFC 8725 §3.11: explicit typing, so a grant is never taken for another JWT). */
const GRANT_TYPE = 'grant+jwt';

interface GrantClaims {
  /** The service's origin (APP_URL). */
  iss: string;
  /** The decision that approved the action. */
  sub: string;
  /** The grant's id. */
  jti: string;
  /** The workspace: its JWKS is at /api/v1/workspaces/{wid}/jwks.json. */
  wid: string;
  /** The approved action's digest. */
  act: string;
  /** The task the action targets, at the version the approval holds for. */
  tgt?: { type: 'task'; id: string; version: number };
  /** Who approved: a human, and `passkey: true` when their passkey signed the ruling. */
  apr: { type: 'human'; id: string; passkey?: true };
  iat: number;
  exp: number;
}

function grantClaims(row: GrantRow, appUrl: string): GrantClaims {
  // One literal, members in one order: the token's bytes depend on it.
  const target =
    row.targetId !== null && row.targetVersion !== null ? { type: 'task' as const, id: row.targetId, version: row.targetVersion } : null;
  return {
    iss: new URL(appUrl).origin,
    sub: row.decisionId,
    jti: row.id,
    wid: row.workspaceId,
    act: row.actionDigest,
    ...(target ? { tgt: target } : {}),
    apr: row.passkey ? { type: 'human', id: row.approverId, passkey: true } : { type: 'human', id: row.approverId },
    iat: Math.floor(row.issuedAt.getTime() / 1000),
    exp: Math.floor(row.expiresAt.getTime() / 1000),
  };
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

/** The grant's token, signed with the key that issued it; null when that key is gone (never, short of a database edit). */
export async function grantToken(db: Executor, row: GrantRow, settings: SigningSettings): Promise<string | null> {
  const key = await signingKeyById(db, row.workspaceId, row.keyId, settings);
  if (!key?.privateKey) return null;
  const header = { alg: 'EdDSA', kid: row.keyId, typ: GRANT_TYPE };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(grantClaims(row, settings.appUrl)))}`;
  return `${input}.${b64url(sign(null, Buffer.from(input), key.privateKey))}`;
}

/** The grant id a token names (its `jti`), read without trusting it; null when it is no JWS with one. */
export function grantIdOf(token: string): string | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    const jti = (claims as { jti?: unknown } | null)?.jti;
    return typeof jti === 'string' ? jti : null;
  } catch {
    return null;
  }
}

/** Whether `presented` is the very token this service signs for the grant. */
export function sameToken(presented: string, issued: string | null): boolean {
  if (issued === null) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(issued);
  return a.length === b.length && timingSafeEqual(a, b);
}
