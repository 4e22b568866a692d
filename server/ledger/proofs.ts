/**
 * What the REST API serves of a workspace's signed tree: its keys, its newest checkpoint with the
 * witnesses' cosignatures, and inclusion and consistency proofs (RFC 9162) read from the tiles.
 * Proofs reach only as far as the newest checkpoint: a size nobody signed is not one a verifier
 * could check a proof against. Hashes are standard base64, as in the C2SP notes.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import { query, type Executor } from '@/db';
import { ledgerCosignatures, ledgerSigningKeys, ledgerWitnesses } from '@/db/schema';
import { AppError } from '@/server/errors';
import { newestCheckpoint } from './checkpoints';
import { consistencyPlan, eventLeafHash, hashesOf, inclusionPlan } from './merkle';
import { vkeyOf } from './note';
import { readNodes } from './tiles';

const b64 = (b: Buffer) => b.toString('base64');

/** The workspace's checkpoint keys, the current one and the retired ones, oldest first. */
export async function listSigningKeys(db: Executor, workspaceId: string) {
  const rows = await db
    .select()
    .from(ledgerSigningKeys)
    .where(eq(ledgerSigningKeys.workspaceId, workspaceId))
    .orderBy(asc(ledgerSigningKeys.createdAt), asc(ledgerSigningKeys.keyId));
  return rows.map((r) => ({
    name: r.name,
    key_id: r.keyId,
    vkey: vkeyOf({ name: r.name, type: 0x01, publicKey: r.publicKey }),
    algorithm: 'ed25519' as const,
    public_key: b64(r.publicKey),
    created_at: r.createdAt.toISOString(),
    retired_at: r.retiredAt?.toISOString() ?? null,
  }));
}

/**
 * A signed checkpoint's note with every named witness's cosignature line after the log's
 * signature, and who cosigned it. Lines of witnesses not named (kept before witnesses were named,
 * or by one since removed) are not served.
 */
export async function cosignedNote(db: Executor, workspaceId: string, checkpoint: { treeSize: number; root: Buffer; note: string }) {
  const cosignatures = await db
    .select({
      witness: ledgerCosignatures.witness,
      keyId: ledgerCosignatures.keyId,
      vkey: ledgerCosignatures.vkey,
      line: ledgerCosignatures.line,
      signedAt: ledgerCosignatures.signedAt,
      receivedAt: ledgerCosignatures.receivedAt,
    })
    .from(ledgerCosignatures)
    .innerJoin(
      ledgerWitnesses,
      and(eq(ledgerWitnesses.workspaceId, ledgerCosignatures.workspaceId), eq(ledgerWitnesses.vkey, ledgerCosignatures.vkey)),
    )
    .where(
      and(
        eq(ledgerCosignatures.workspaceId, workspaceId),
        eq(ledgerCosignatures.treeSize, checkpoint.treeSize),
        eq(ledgerCosignatures.root, checkpoint.root),
      ),
    )
    .orderBy(asc(ledgerCosignatures.receivedAt), asc(ledgerCosignatures.witness));
  return {
    note: checkpoint.note + cosignatures.map((c) => c.line).join(''),
    cosignatures: cosignatures.map((c) => ({
      witness: c.witness,
      key_id: c.keyId,
      vkey: c.vkey,
      signed_at: c.signedAt.toISOString(),
      received_at: c.receivedAt.toISOString(),
    })),
  };
}

/** The newest checkpoint, its note carrying every witness's cosignature line; 404 before the first. */
export async function currentCheckpoint(db: Executor, workspaceId: string) {
  const checkpoint = await newestCheckpoint(db, workspaceId);
  if (!checkpoint)
    throw new AppError('not_found', 'This workspace has no signed checkpoint yet: one is signed within a second or so of its first event.');
  return {
    origin: checkpoint.note.slice(0, checkpoint.note.indexOf('\n')),
    tree_size: checkpoint.treeSize,
    root_hash: b64(checkpoint.root),
    ...(await cosignedNote(db, workspaceId, checkpoint)),
  };
}

/** A 400 naming the query parameter at fault, as the input checks name them. */
function refused(field: string, message: string): AppError {
  return new AppError('validation_failed', message, { issues: [{ path: `query.${field}`, message }] });
}

/** The newest signed size; a proof asked past it is 400 (naming `field`). */
async function signedSize(db: Executor, workspaceId: string, wanted: number, field: string): Promise<number> {
  const checkpoint = await newestCheckpoint(db, workspaceId);
  const signed = checkpoint?.treeSize ?? 0;
  if (wanted > signed) {
    throw refused(field, `${field} ${wanted} is past the newest signed checkpoint (tree size ${signed}).`);
  }
  return signed;
}

/** The audit path of the event at `sequence` in the tree of `treeSize` (default: the newest signed). */
export async function inclusionProof(db: Executor, workspaceId: string, input: { sequence: number; tree_size?: number }) {
  const signed = await signedSize(db, workspaceId, input.tree_size ?? 0, 'tree_size');
  const treeSize = input.tree_size ?? signed;
  if (input.sequence > treeSize) {
    throw refused('sequence', `Event ${input.sequence} is not in the tree of ${treeSize} events.`);
  }
  const [event] = await query<{ event_hash: string }>(
    db,
    sql`select event_hash from ledger_events where workspace_id = ${workspaceId} and sequence = ${input.sequence}`,
  );
  if (!event) throw new AppError('not_found', `Event ${input.sequence} is not in this workspace’s ledger.`);
  const plan = inclusionPlan(input.sequence - 1, treeSize);
  const path = hashesOf(plan, await readNodes(db, workspaceId, plan.nodes));
  return {
    sequence: input.sequence,
    tree_size: treeSize,
    leaf_index: input.sequence - 1,
    leaf_hash: b64(eventLeafHash(event.event_hash)),
    inclusion_path: path.map(b64),
  };
}

/** The consistency proof between the trees of `from` and `to` events (`to` default: the newest signed). */
export async function consistencyProof(db: Executor, workspaceId: string, input: { from: number; to?: number }) {
  const signed = await signedSize(db, workspaceId, input.to ?? 0, 'to');
  const to = input.to ?? signed;
  if (input.from > to) throw refused('from', `from ${input.from} is past to ${to}.`);
  const plan = consistencyPlan(input.from, to);
  const proof = hashesOf(plan, await readNodes(db, workspaceId, plan.nodes));
  return { from: input.from, to, consistency_path: proof.map(b64) };
}

/**
 * A receipt's `ledger_proof`: the newest checkpoint (with its cosignatures) and the audit path of
 * the event at `sequence` in its tree; null while no checkpoint covers that event yet (it is
 * signed within CHECKPOINT_INTERVAL_MS of its commit).
 */
export async function ledgerProofOf(db: Executor, workspaceId: string, sequence: number) {
  const signed = await newestCheckpoint(db, workspaceId);
  if (!signed || signed.treeSize < sequence) return null;
  const plan = inclusionPlan(sequence - 1, signed.treeSize);
  const path = hashesOf(plan, await readNodes(db, workspaceId, plan.nodes));
  return {
    checkpoint: (await cosignedNote(db, workspaceId, signed)).note,
    leaf_index: sequence - 1,
    tree_size: signed.treeSize,
    inclusion_path: path.map(b64),
  };
}
