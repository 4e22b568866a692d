/**
 * Signed checkpoints of a workspace's ledger: its Ed25519 signing keys and the notes they sign
 * (note.ts, C2SP tlog-checkpoint). The key's name is the checkpoint origin,
 * `<APP_URL host>/workspaces/<id>`; its private half is kept encrypted under the instance secret
 * LEDGER_KEY_SECRET (or one generated in the instance secrets), as webhook secrets are. A key is
 * made the first time the workspace is signed for; each later one (a rotation) is announced in the
 * ledger (`ledger.key_added`).
 */
import { and, desc, eq, isNull } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { ledgerCheckpoints, ledgerSigningKeys } from '@/db/schema';
import { systemActor } from '@/server/domain/decisions/timeouts';
import { decryptSecret, encryptSecret } from '@/server/webhooks/secrets';
import { appendEvents } from './append';
import { checkpointText, generateNoteKey, noteKeyFromSeed, signNote, vkeyOf, type NoteKey } from './note';

/** What signing needs of the instance: where it is reached, and the secret its keys are kept under. */
export interface SigningSettings {
  appUrl: string;
  secret: string;
}

/** A workspace's checkpoint origin (and its keys' name): `<APP_URL host>/workspaces/<id>`. */
function originOf(appUrl: string, workspaceId: string): string {
  return `${new URL(appUrl).host}/workspaces/${workspaceId}`;
}

/** The seed is encrypted with its own purpose, so it never decrypts as a webhook secret would. */
const sealed = (secret: string) => `ledger-keys:${secret}`;

/** Adds a new signing key for the workspace, retiring the current one if any (a rotation, announced). */
export async function addSigningKey(tx: Tx, workspaceId: string, settings: SigningSettings, at = new Date()): Promise<NoteKey> {
  const origin = originOf(settings.appUrl, workspaceId);
  const key = generateNoteKey(origin);
  const vkey = vkeyOf(key);
  const keyId = vkey.split('+')[1]!;
  const retired = await tx
    .update(ledgerSigningKeys)
    .set({ retiredAt: at })
    .where(and(eq(ledgerSigningKeys.workspaceId, workspaceId), isNull(ledgerSigningKeys.retiredAt)))
    .returning({ keyId: ledgerSigningKeys.keyId });
  await tx.insert(ledgerSigningKeys).values({
    workspaceId,
    keyId,
    name: origin,
    publicKey: key.publicKey,
    privateKeyCipher: encryptSecret(sealed(settings.secret), key.seed.toString('base64')),
    createdAt: at,
  });
  // A rotation is announced in the ledger, so that the chain itself says when the key changed and
  // which key came next. The first key is not: it is made when the integrator first signs, in the
  // background, and an event there would appear in the ledger at no request's doing; GET
  // /ledger/keys lists it, and a witness pins it on first sight.
  if (retired[0]) {
    await appendEvents(
      tx,
      await systemActor(tx, workspaceId, 'system:checkpoints'),
      [
        {
          aggregateType: 'workspace',
          aggregateId: workspaceId,
          eventType: 'ledger.key_added',
          payload: {
            key_id: keyId,
            name: origin,
            algorithm: 'ed25519',
            public_key: key.publicKey.toString('base64'),
            vkey,
            replaces: retired[0].keyId,
          },
        },
      ],
      at,
    );
  }
  return key;
}

/** The workspace's current signing key, or null before its first. */
/**
 * Keys as imported for signing, by their stored cipher text and the secret that opens it. The
 * integrator signs each busy workspace's checkpoint every period, and decrypting and importing the
 * key each time was most of what a pass cost this process (measured: 0.16 ms of CPU per POST /work
 * over 64 busy workspaces). Bounded: the oldest entry goes first.
 */
const importedKeys = new Map<string, NoteKey>();
const MAX_IMPORTED_KEYS = 10_000;

function importedKey(name: string, cipher: string, settings: SigningSettings): NoteKey {
  const cacheKey = `${settings.secret}\n${cipher}`;
  let key = importedKeys.get(cacheKey);
  if (!key) {
    key = noteKeyFromSeed(name, Buffer.from(decryptSecret(sealed(settings.secret), cipher), 'base64'));
    if (importedKeys.size >= MAX_IMPORTED_KEYS) importedKeys.delete(importedKeys.keys().next().value!);
    importedKeys.set(cacheKey, key);
  }
  return key;
}

async function currentKey(tx: Tx, workspaceId: string, settings: SigningSettings): Promise<{ key: NoteKey; keyId: string } | null> {
  // Read every time: a rotation (another process) retires the key this one may hold imported.
  const [row] = await tx
    .select()
    .from(ledgerSigningKeys)
    .where(and(eq(ledgerSigningKeys.workspaceId, workspaceId), isNull(ledgerSigningKeys.retiredAt)));
  if (!row) return null;
  return { key: importedKey(row.name, row.privateKeyCipher, settings), keyId: row.keyId };
}

/**
 * The workspace's current signing key, made now when it has none (a grant may be issued before the
 * integrator first signs). Two transactions making the first key at once both end with the one
 * that committed first: the insert waits on the other's row and then does nothing.
 */
export async function ensureSigningKey(tx: Tx, workspaceId: string, settings: SigningSettings): Promise<{ key: NoteKey; keyId: string }> {
  const current = await currentKey(tx, workspaceId, settings);
  if (current) return current;
  const origin = originOf(settings.appUrl, workspaceId);
  const key = generateNoteKey(origin);
  await tx
    .insert(ledgerSigningKeys)
    .values({
      workspaceId,
      keyId: vkeyOf(key).split('+')[1]!,
      name: origin,
      publicKey: key.publicKey,
      privateKeyCipher: encryptSecret(sealed(settings.secret), key.seed.toString('base64')),
    })
    .onConflictDoNothing({ target: ledgerSigningKeys.workspaceId, where: isNull(ledgerSigningKeys.retiredAt) });
  const made = await currentKey(tx, workspaceId, settings);
  if (!made) throw new Error(`no signing key for workspace ${workspaceId} after making one`);
  return made;
}

/** One of the workspace's keys (current or retired) by its id, imported for signing; null if none. */
export async function signingKeyById(db: Executor, workspaceId: string, keyId: string, settings: SigningSettings): Promise<NoteKey | null> {
  const [row] = await db
    .select()
    .from(ledgerSigningKeys)
    .where(and(eq(ledgerSigningKeys.workspaceId, workspaceId), eq(ledgerSigningKeys.keyId, keyId)));
  return row ? importedKey(row.name, row.privateKeyCipher, settings) : null;
}

/** A workspace's current signing key as stored: what signing needs of its row. */
export interface SigningKeyRow {
  keyId: string;
  name: string;
  privateKeyCipher: string;
}

/**
 * The checkpoint of the workspace's tree at `size` with `root`, signed with the key in `row` (read
 * by the caller in the same transaction, as the integrator reads many workspaces' keys at once):
 * the row to keep in ledger_checkpoints.
 */
export function signedCheckpointRow(workspaceId: string, size: number, root: Buffer, row: SigningKeyRow, settings: SigningSettings) {
  return checkpointRow(workspaceId, size, root, { key: importedKey(row.name, row.privateKeyCipher, settings), keyId: row.keyId }, settings);
}

function checkpointRow(
  workspaceId: string,
  size: number,
  root: Buffer,
  signer: { key: NoteKey; keyId: string },
  settings: SigningSettings,
) {
  const note = signNote(checkpointText(originOf(settings.appUrl, workspaceId), size, root), signer.key);
  return { workspaceId, treeSize: size, root, note, keyId: signer.keyId };
}

/**
 * Signs the checkpoint of the workspace's tree at `size` with `root`, and keeps it. Returns
 * whether the workspace had no key yet: then a key was made, and its `ledger.key_added` event
 * moved the ledger past `size` (the next checkpoint covers it).
 */
export async function signCheckpoint(
  tx: Tx,
  workspaceId: string,
  size: number,
  root: Buffer,
  settings: SigningSettings,
): Promise<{ keyAdded: boolean }> {
  const keyAdded = (await currentKey(tx, workspaceId, settings)) === null;
  // Made as an approval's grant makes it, so the two never collide on the workspace's first key.
  const current = await ensureSigningKey(tx, workspaceId, settings);
  await tx
    .insert(ledgerCheckpoints)
    .values(checkpointRow(workspaceId, size, root, current, settings))
    .onConflictDoNothing();
  return { keyAdded };
}

/**
 * The checkpoint signed last for the workspace, or null before the first. The last signed, not the
 * largest: after the tree was rebuilt shorter, that is what the log now says, and what a witness
 * must be shown to catch it.
 */
export async function newestCheckpoint(tx: Tx, workspaceId: string) {
  const [row] = await tx
    .select()
    .from(ledgerCheckpoints)
    .where(eq(ledgerCheckpoints.workspaceId, workspaceId))
    .orderBy(desc(ledgerCheckpoints.createdAt), desc(ledgerCheckpoints.treeSize))
    .limit(1);
  return row ?? null;
}
