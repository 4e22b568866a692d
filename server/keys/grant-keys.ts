/**
 * A workspace's grant keys: the Ed25519 keys its grant tokens (compact JWS, EdDSA) are signed with,
 * apart from its checkpoint keys so that the JWKS a tool server trusts shares no key with the keys
 * a witness pins (GET /ledger/keys). A key's `kid` is its RFC 7638 JWK thumbprint (43 base64url
 * characters), which no checkpoint key id (8 hex digits) can equal. The first key is made with the
 * workspace's first grant; a rotation retires the current key, which stays: the grants it signed
 * keep their tokens, and the JWKS keeps serving it while they may live.
 */
import { and, asc, eq, gt, inArray, isNull, or } from 'drizzle-orm';
import type { KeyObject } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import type { Executor, Tx } from '@/db';
import { grantSigningKeys } from '@/db/schema';
import { generateEd25519, OpenedKeys, openSeed, privateKeyOfSeed, sealSeed, type SigningSettings } from './workspace-keys';

/** The JWK thumbprint (RFC 7638, SHA-256) of an Ed25519 public key: the key's `kid`. */
function grantKid(publicKey: Buffer): Promise<string> {
  return calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: publicKey.toString('base64url') }, 'sha256');
}

async function newKeyRow(workspaceId: string, settings: SigningSettings) {
  const { seed, publicKey } = generateEd25519();
  return { workspaceId, kid: await grantKid(publicKey), publicKey, privateKeyCipher: sealSeed(settings, seed) };
}

async function currentKid(tx: Tx, workspaceId: string): Promise<string | null> {
  const [row] = await tx
    .select({ kid: grantSigningKeys.kid })
    .from(grantSigningKeys)
    .where(and(eq(grantSigningKeys.workspaceId, workspaceId), isNull(grantSigningKeys.retiredAt)));
  return row?.kid ?? null;
}

/**
 * The `kid` of the workspace's current grant key, made now when it has none. Two approvals making
 * the first key at once both end with the one that committed first: the insert waits on the
 * other's row and then does nothing.
 */
export async function ensureGrantKey(tx: Tx, workspaceId: string, settings: SigningSettings): Promise<string> {
  const current = await currentKid(tx, workspaceId);
  if (current) return current;
  await tx
    .insert(grantSigningKeys)
    .values(await newKeyRow(workspaceId, settings))
    .onConflictDoNothing({ target: grantSigningKeys.workspaceId, where: isNull(grantSigningKeys.retiredAt) });
  const made = await currentKid(tx, workspaceId);
  if (!made) throw new Error(`no grant key for workspace ${workspaceId} after making one`);
  return made;
}

/** Gives the workspace a new grant key, retiring the current one if any. Returns the new `kid` and the one it replaces. */
export async function rotateGrantKey(
  tx: Tx,
  workspaceId: string,
  settings: SigningSettings,
  at = new Date(),
): Promise<{ kid: string; replaces: string | null }> {
  const row = await newKeyRow(workspaceId, settings);
  const retired = await tx
    .update(grantSigningKeys)
    .set({ retiredAt: at })
    .where(and(eq(grantSigningKeys.workspaceId, workspaceId), isNull(grantSigningKeys.retiredAt)))
    .returning({ kid: grantSigningKeys.kid });
  await tx.insert(grantSigningKeys).values({ ...row, createdAt: at });
  opened.drop(`${workspaceId}\n`);
  return { kid: row.kid, replaces: retired[0]?.kid ?? null };
}

/**
 * Grant keys opened for signing, by workspace and kid. A kid is its key's thumbprint, so an entry
 * is right for as long as the key exists, retired or not: a view of many decisions opens each of
 * its keys once, and later views none.
 */
const opened = new OpenedKeys<KeyObject>(10_000);
const openedName = (settings: SigningSettings, workspaceId: string, kid: string) => `${workspaceId}\n${kid}\n${settings.secret}`;

/**
 * The private keys of the workspace's grant keys `kids` (current or retired), opened for signing:
 * one read of the database for those not opened yet, none when all are. A kid with no key is
 * absent from the answer (never, short of a database edit).
 */
export async function grantSigningKeysOf(
  db: Executor,
  workspaceId: string,
  kids: readonly string[],
  settings: SigningSettings,
): Promise<Map<string, KeyObject>> {
  const out = new Map<string, KeyObject>();
  const missing = new Set<string>();
  for (const kid of kids) {
    const name = openedName(settings, workspaceId, kid);
    const key = opened.peek(name);
    if (key) out.set(kid, key);
    else missing.add(kid);
  }
  if (missing.size === 0) return out;
  const rows = await db
    .select({ kid: grantSigningKeys.kid, privateKeyCipher: grantSigningKeys.privateKeyCipher })
    .from(grantSigningKeys)
    .where(and(eq(grantSigningKeys.workspaceId, workspaceId), inArray(grantSigningKeys.kid, [...missing])));
  for (const row of rows) {
    out.set(
      row.kid,
      opened.get(openedName(settings, workspaceId, row.kid), () => privateKeyOfSeed(openSeed(settings, row.privateKeyCipher))),
    );
  }
  return out;
}

/**
 * The workspace's grant keys a verifier may still need, oldest first: the current one, and those
 * retired after `since` (the caller's longest grant life ago: no grant a key older than that signed
 * is still alive).
 */
export async function servedGrantKeys(db: Executor, workspaceId: string, since: Date): Promise<{ kid: string; publicKey: Buffer }[]> {
  return db
    .select({ kid: grantSigningKeys.kid, publicKey: grantSigningKeys.publicKey })
    .from(grantSigningKeys)
    .where(
      and(eq(grantSigningKeys.workspaceId, workspaceId), or(isNull(grantSigningKeys.retiredAt), gt(grantSigningKeys.retiredAt, since))),
    )
    .orderBy(asc(grantSigningKeys.createdAt), asc(grantSigningKeys.kid));
}
