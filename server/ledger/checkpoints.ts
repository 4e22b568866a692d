/**
 * Signed checkpoints of a workspace's ledger: the notes its checkpoint keys sign (note.ts, C2SP
 * tlog-checkpoint), and the announcement of a key rotation in the ledger. The keys themselves (made,
 * sealed at rest, rotated, opened) are server/keys/checkpoint-keys.ts's. A key is made the first
 * time the workspace is signed for; each later one (a rotation) is announced in the ledger
 * (`ledger.key_added`).
 */
import { desc, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerCheckpoints } from '@/db/schema';
import { systemActor } from '@/server/domain/actor';
import {
  checkpointOrigin,
  currentCheckpointKey,
  ensureCheckpointKey,
  openCheckpointKey,
  rotateCheckpointKey,
  type CheckpointKeyRow,
  type CheckpointSigner,
} from '@/server/keys/checkpoint-keys';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { appendEvents } from './append';
import { checkpointText, signNote, type NoteKey } from './note';

/** Adds a new checkpoint key for the workspace, retiring the current one if any (a rotation, announced). */
export async function addSigningKey(tx: Tx, workspaceId: string, settings: SigningSettings, at = new Date()): Promise<NoteKey> {
  const made = await rotateCheckpointKey(tx, workspaceId, settings, at);
  // A rotation is announced in the ledger, so that the chain itself says when the key changed and
  // which key came next. The first key is not: it is made when the integrator first signs, in the
  // background, and an event there would appear in the ledger at no request's doing; GET
  // /ledger/keys lists it, and a witness pins it on first sight.
  if (made.replaces) {
    await appendEvents(
      tx,
      await systemActor(tx, workspaceId, 'system:checkpoints'),
      [
        {
          aggregateType: 'workspace',
          aggregateId: workspaceId,
          eventType: 'ledger.key_added',
          payload: {
            key_id: made.keyId,
            name: made.key.name,
            algorithm: 'ed25519',
            public_key: made.key.publicKey.toString('base64'),
            vkey: made.vkey,
            replaces: made.replaces,
          },
        },
      ],
      at,
    );
  }
  return made.key;
}

/**
 * The checkpoint of the workspace's tree at `size` with `root`, signed with the key in `row` (read
 * by the caller in the same transaction, as the integrator reads many workspaces' keys at once):
 * the row to keep in ledger_checkpoints.
 */
export function signedCheckpointRow(
  workspaceId: string,
  size: number,
  root: Buffer,
  row: Omit<CheckpointKeyRow, 'workspaceId'>,
  settings: SigningSettings,
) {
  return checkpointRow(workspaceId, size, root, openCheckpointKey({ ...row, workspaceId }, settings), settings);
}

function checkpointRow(workspaceId: string, size: number, root: Buffer, signer: CheckpointSigner, settings: SigningSettings) {
  const note = signNote(checkpointText(checkpointOrigin(settings.appUrl, workspaceId), size, root), signer.key);
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
  const keyAdded = (await currentCheckpointKey(tx, workspaceId, settings)) === null;
  const current = await ensureCheckpointKey(tx, workspaceId, settings);
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
