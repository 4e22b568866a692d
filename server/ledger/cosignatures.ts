/**
 * Witnesses' cosignatures (C2SP tlog-cosignature): a witness that checked a checkpoint against
 * what it saw before sends back the note with its cosignature line, and the service keeps the line
 * beside the checkpoint, served with it from then on.
 *
 * A cosignature is kept only from a witness the workspace's owners named (ledger_witnesses,
 * server/domain/witnesses), only when it verifies with that witness's key and vouches for a
 * checkpoint this workspace signed, word for word, and only one per witness and tree size (the
 * newest it signed): anyone with a key of the workspace could otherwise vouch under any name, and
 * grow the checkpoint every witness reads past what a witness reads. It is an attestation about the ledger, made
 * outside it, so it is not a ledger event (as webhook delivery attempts are not): an event per
 * cosignature would itself grow the tree the witness just vouched for, and call for the next one.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { ledgerCheckpoints, ledgerCosignatures, ledgerWitnesses } from '@/db/schema';
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

/** The most characters a witness's name (its key name) has. */
export const MAX_WITNESS_NAME = 128;
/** How far ahead of the service's clock a cosignature's time may be. */
const MAX_COSIGNATURE_AHEAD_MS = 10 * 60_000;

/**
 * The witness key a vkey names, checked as a witness key must be: C2SP's form, an Ed25519
 * cosignature key (type 0x04), a name of at most MAX_WITNESS_NAME characters and no control character.
 */
export function witnessKeyOf(vkey: string, field: string): NoteVerifier {
  let verifier: NoteVerifier;
  try {
    verifier = parseVkey(vkey);
  } catch (err) {
    throw refused(field, `Not a verifier key: ${(err as Error).message}.`);
  }
  if (verifier.type !== COSIGNATURE_ED25519) throw refused(field, 'A witness key is an Ed25519 cosignature key (type 0x04).');
  if ([...verifier.name].length > MAX_WITNESS_NAME) throw refused(field, `A witness’s name is at most ${MAX_WITNESS_NAME} characters.`);
  if (/\p{Cc}/u.test(verifier.name)) throw refused(field, 'A witness’s name holds no control characters.');
  return verifier;
}

/** Keeps the witness's cosignature of one of the workspace's checkpoints; `recorded` is false when it was already kept. */
export async function addCosignature(tx: Tx, actor: Actor, input: CosignatureInput, now = new Date()) {
  const witness = witnessKeyOf(input.witness_vkey, 'witness_vkey');
  const keyId = witness.keyId.toString('hex');
  // Before anything is verified: a stranger's key costs one indexed read. parseVkey accepts only
  // canonical base64, so the key's text is the one the owner named.
  const [named] = await tx
    .select({ id: ledgerWitnesses.id })
    .from(ledgerWitnesses)
    .where(and(eq(ledgerWitnesses.workspaceId, actor.workspaceId), eq(ledgerWitnesses.vkey, input.witness_vkey)));
  if (!named) {
    throw new AppError(
      'witness_not_named',
      `The witness ${witness.name} (key ${keyId}) is not one this workspace's owners named: an owner names it with ` +
        'POST /ledger/witnesses {"vkey": "<its verifier key>"}, and its cosignatures are kept from then on.',
      { witness: witness.name, key_id: keyId, vkey: input.witness_vkey },
    );
  }
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
  // A time no clock reads yet (and past what a date holds) is not one a witness signed at.
  if (found.time * 1000 > now.getTime() + MAX_COSIGNATURE_AHEAD_MS) {
    throw refused(
      'note',
      `The cosignature's time ${found.time} is more than ${MAX_COSIGNATURE_AHEAD_MS / 60_000} minutes ahead of this service's clock ` +
        `(${Math.floor(now.getTime() / 1000)}).`,
    );
  }
  const signedAt = new Date(found.time * 1000);
  // One per witness and size: a newer cosignature replaces the one kept, an older one (a line
  // replayed from an earlier checkpoint) changes nothing.
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
      receivedAt: now,
    })
    .onConflictDoUpdate({
      target: [ledgerCosignatures.workspaceId, ledgerCosignatures.treeSize, ledgerCosignatures.witness, ledgerCosignatures.keyId],
      set: { root, vkey: input.witness_vkey, line: found.line, signedAt, receivedAt: now },
      setWhere: sql`excluded.signed_at >= ${ledgerCosignatures.signedAt} and excluded.line <> ${ledgerCosignatures.line}`,
    })
    .returning({ treeSize: ledgerCosignatures.treeSize });
  return { tree_size: size, witness: witness.name, key_id: keyId, signed_at: signedAt.toISOString(), recorded: kept.length === 1 };
}
