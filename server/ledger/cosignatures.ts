/**
 * Witnesses' cosignatures (C2SP tlog-cosignature): a witness that checked a checkpoint against
 * what it saw before sends back the note with its cosignature line, and the service keeps the line
 * beside the checkpoint, served with it from then on.
 *
 * A cosignature is kept only when it verifies with the witness key sent with it and vouches for a
 * checkpoint this workspace signed, word for word. It is an attestation about the ledger, made
 * outside it, so it is not a ledger event (as webhook delivery attempts are not): an event per
 * cosignature would itself grow the tree the witness just vouched for, and call for the next one.
 */
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerCheckpoints, ledgerCosignatures } from '@/db/schema';
import type { Actor } from '@/server/domain/actor';
import { AppError } from '@/server/errors';
import { COSIGNATURE_ED25519, parseCheckpoint, parseNote, parseVkey, verifyCosignature, type NoteVerifier } from './note';

export interface CosignatureInput {
  /** The checkpoint note with the witness's cosignature line among its signature lines. */
  note: string;
  /** The witness's verifier key (`<name>+<key id>+<base64(0x04 ‖ public key)>`). */
  witness_vkey: string;
}

const refused = (field: string, message: string) => new AppError('validation_failed', message, { issues: [{ path: field, message }] });

function witnessOf(vkey: string): NoteVerifier {
  let verifier: NoteVerifier;
  try {
    verifier = parseVkey(vkey);
  } catch (err) {
    throw refused('witness_vkey', `Not a verifier key: ${(err as Error).message}.`);
  }
  if (verifier.type !== COSIGNATURE_ED25519) throw refused('witness_vkey', 'A witness key is an Ed25519 cosignature key (type 0x04).');
  return verifier;
}

/** Keeps the witness's cosignature of one of the workspace's checkpoints; `recorded` is false when it was already kept. */
export async function addCosignature(tx: Tx, actor: Actor, input: CosignatureInput) {
  const witness = witnessOf(input.witness_vkey);
  let text: string;
  let lines;
  try {
    ({ text, signatures: lines } = parseNote(input.note));
  } catch (err) {
    throw refused('note', `Not a signed note: ${(err as Error).message}.`);
  }
  let size: number;
  let root: Buffer;
  try {
    ({ size, root } = parseCheckpoint(text));
  } catch (err) {
    throw refused('note', `Not a checkpoint: ${(err as Error).message}.`);
  }
  // Every note signed at this size: one, or more after the tree was rebuilt from changed events.
  const signed = await tx
    .select({ note: ledgerCheckpoints.note, root: ledgerCheckpoints.root })
    .from(ledgerCheckpoints)
    .where(and(eq(ledgerCheckpoints.workspaceId, actor.workspaceId), eq(ledgerCheckpoints.treeSize, size)));
  if (signed.length === 0) throw new AppError('not_found', `This workspace signed no checkpoint of tree size ${size}.`);
  if (!signed.some((c) => c.root.equals(root) && c.note.startsWith(`${text}\n`))) {
    throw new AppError('conflict', `The note is not the checkpoint this workspace signed at tree size ${size}.`);
  }
  let found: { line: string; time: number } | undefined;
  for (const line of lines) {
    const time = verifyCosignature(text, line, witness);
    if (time !== null) found = { line: line.line, time };
  }
  if (!found) throw refused('note', `The note carries no valid cosignature by ${witness.name}.`);
  const keyId = witness.keyId.toString('hex');
  const signedAt = new Date(found.time * 1000);
  const kept = await tx
    .insert(ledgerCosignatures)
    .values({
      workspaceId: actor.workspaceId,
      treeSize: size,
      root,
      witness: witness.name,
      keyId,
      vkey: input.witness_vkey,
      line: found.line,
      signedAt,
    })
    .onConflictDoNothing()
    .returning({ treeSize: ledgerCosignatures.treeSize });
  return { tree_size: size, witness: witness.name, key_id: keyId, signed_at: signedAt.toISOString(), recorded: kept.length === 1 };
}
