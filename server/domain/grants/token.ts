/**
 * A grant's token: a compact JWS (RFC 7515), EdDSA over Ed25519 with the workspace's grant key
 * (server/keys/grant-keys.ts), whose claims say which decision approved which action, for which
 * target, by whom, until when. A tool server checks it offline against the workspace's JWKS
 * (jwks.ts) with any JOSE library; the service signs it with one (jose).
 *
 * The token is never stored: it is signed again from the grant's row whenever it is shown. Ed25519
 * signatures are deterministic (RFC 8032) and the header and claims are written in a fixed order
 * here, so the same grant always has the same token, and a presented token is checked by signing
 * the row it names and comparing the two.
 */
import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { CompactSign, decodeJwt } from 'jose';
import type { Executor } from '@/db';
import type { decisionGrants } from '@/db/schema';
import { grantSigningKeysOf } from '@/server/keys/grant-keys';
import type { SigningSettings } from '@/server/keys/workspace-keys';

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
  /** Whom the grant is for (azp.ts): the raising key's id, or `user:<id>` for a person. */
  azp?: string;
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
    ...(row.azp !== null ? { azp: row.azp } : {}),
    act: row.actionDigest,
    ...(target ? { tgt: target } : {}),
    apr: row.passkey ? { type: 'human', id: row.approverId, passkey: true } : { type: 'human', id: row.approverId },
    iat: Math.floor(row.issuedAt.getTime() / 1000),
    exp: Math.floor(row.expiresAt.getTime() / 1000),
  };
}

/** The token of `row`, signed with `key` (the grant key its `keyId` names). */
function signedToken(row: GrantRow, key: KeyObject, appUrl: string): Promise<string> {
  return new CompactSign(Buffer.from(JSON.stringify(grantClaims(row, appUrl))))
    .setProtectedHeader({ alg: 'EdDSA', kid: row.keyId, typ: GRANT_TYPE })
    .sign(key);
}

/**
 * The tokens of `rows` (grants of one workspace), by grant id, each signed with the key that
 * issued it; a grant whose key is gone (never, short of a database edit) has none. The keys are
 * opened once per process (server/keys/grant-keys.ts), so a view of many grants reads them at
 * most once and opens none it opened before.
 */
export async function grantTokens(
  db: Executor,
  workspaceId: string,
  rows: readonly GrantRow[],
  settings: SigningSettings,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (rows.length === 0) return out;
  const keys = await grantSigningKeysOf(db, workspaceId, [...new Set(rows.map((r) => r.keyId))], settings);
  const signed = await Promise.all(
    rows.map(async (row) => {
      const key = row.workspaceId === workspaceId ? keys.get(row.keyId) : undefined;
      return key ? ([row.id, await signedToken(row, key, settings.appUrl)] as const) : null;
    }),
  );
  for (const entry of signed) if (entry) out.set(entry[0], entry[1]);
  return out;
}

/** The grant's token, signed with the key that issued it; null when that key is gone. */
export async function grantToken(db: Executor, row: GrantRow, settings: SigningSettings): Promise<string | null> {
  return (await grantTokens(db, row.workspaceId, [row], settings)).get(row.id) ?? null;
}

/** The grant id a token names (its `jti`), read without trusting it; null when it is no JWS with one. */
export function grantIdOf(token: string): string | null {
  try {
    const { jti } = decodeJwt(token);
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
