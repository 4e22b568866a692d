/**
 * A workspace's checkpoint keys: the Ed25519 note keys its ledger's checkpoints are signed with
 * (C2SP signed-note, note-keys.ts). The key's name is the checkpoint origin,
 * `<APP_URL host>/workspaces/<id>`, its id the note key id (8 hex digits) that GET /ledger/keys and
 * the checkpoints name; its private half is sealed under the instance's ledger secret. The current
 * key is the one row not retired; retired keys stay, as old checkpoints name them.
 *
 * Making, rotating and opening them is here; announcing a rotation in the ledger is the ledger's
 * (server/ledger/checkpoints.ts).
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerSigningKeys } from '@/db/schema';
import { generateNoteKey, noteKeyFromSeed, vkeyOf, type NoteKey } from './note-keys';
import { OpenedKeys, openSeed, sealSeed, type SigningSettings } from './workspace-keys';

/** A workspace's checkpoint origin (and its keys' name): `<APP_URL host>/workspaces/<id>`. */
export function checkpointOrigin(appUrl: string, workspaceId: string): string {
  return `${new URL(appUrl).host}/workspaces/${workspaceId}`;
}

/** A checkpoint key opened for signing, and its note key id. */
export interface CheckpointSigner {
  key: NoteKey;
  keyId: string;
}

/** A workspace's checkpoint key as stored: what signing needs of its row. */
export interface CheckpointKeyRow {
  workspaceId: string;
  keyId: string;
  name: string;
  privateKeyCipher: string;
}

/**
 * Opened keys by workspace and cipher text. The integrator signs each busy workspace's checkpoint
 * every period, and opening and importing the key each time was most of what a pass cost this
 * process (measured: 0.16 ms of CPU per POST /work over 64 busy workspaces).
 */
const opened = new OpenedKeys<NoteKey>(10_000);

/** The key in `row`, opened for signing (once per process and key). */
export function openCheckpointKey(row: CheckpointKeyRow, settings: SigningSettings): CheckpointSigner {
  const key = opened.get(`${row.workspaceId}\n${settings.secret}\n${row.privateKeyCipher}`, () =>
    noteKeyFromSeed(row.name, openSeed(settings, row.privateKeyCipher)),
  );
  return { key, keyId: row.keyId };
}

function newKey(workspaceId: string, settings: SigningSettings) {
  const name = checkpointOrigin(settings.appUrl, workspaceId);
  const key = generateNoteKey(name);
  const vkey = vkeyOf(key);
  return {
    key,
    vkey,
    row: { workspaceId, keyId: vkey.split('+')[1]!, name, publicKey: key.publicKey, privateKeyCipher: sealSeed(settings, key.seed) },
  };
}

/** The workspace's current checkpoint key, or null before its first. */
export async function currentCheckpointKey(tx: Tx, workspaceId: string, settings: SigningSettings): Promise<CheckpointSigner | null> {
  // Read every time: a rotation (another process) retires the key this one may hold opened.
  const [row] = await tx
    .select()
    .from(ledgerSigningKeys)
    .where(and(eq(ledgerSigningKeys.workspaceId, workspaceId), isNull(ledgerSigningKeys.retiredAt)));
  return row ? openCheckpointKey(row, settings) : null;
}

/**
 * The workspace's current checkpoint key, made now when it has none. Two transactions making the
 * first key at once both end with the one that committed first: the insert waits on the other's
 * row and then does nothing.
 */
export async function ensureCheckpointKey(tx: Tx, workspaceId: string, settings: SigningSettings): Promise<CheckpointSigner> {
  const current = await currentCheckpointKey(tx, workspaceId, settings);
  if (current) return current;
  await tx
    .insert(ledgerSigningKeys)
    .values(newKey(workspaceId, settings).row)
    .onConflictDoNothing({ target: ledgerSigningKeys.workspaceId, where: isNull(ledgerSigningKeys.retiredAt) });
  const made = await currentCheckpointKey(tx, workspaceId, settings);
  if (!made) throw new Error(`no checkpoint key for workspace ${workspaceId} after making one`);
  return made;
}

/**
 * Gives the workspace a new checkpoint key, retiring the current one if any (which stays, as the
 * checkpoints it signed name it). Returns the new key, its vkey, and the id of the key it replaces.
 */
export async function rotateCheckpointKey(
  tx: Tx,
  workspaceId: string,
  settings: SigningSettings,
  at = new Date(),
): Promise<CheckpointSigner & { vkey: string; replaces: string | null }> {
  const made = newKey(workspaceId, settings);
  const retired = await tx
    .update(ledgerSigningKeys)
    .set({ retiredAt: at })
    .where(and(eq(ledgerSigningKeys.workspaceId, workspaceId), isNull(ledgerSigningKeys.retiredAt)))
    .returning({ keyId: ledgerSigningKeys.keyId });
  await tx.insert(ledgerSigningKeys).values({ ...made.row, createdAt: at });
  opened.drop(`${workspaceId}\n`);
  return { key: made.key, keyId: made.row.keyId, vkey: made.vkey, replaces: retired[0]?.keyId ?? null };
}
