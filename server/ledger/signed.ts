/**
 * Checking a chain against what the log signed: the newest signed checkpoint
 * kept in the database, its signature verified with the workspace's key, and the Merkle root of
 * the chain's first `tree_size` events compared with the signed root. Cutting the newest events
 * and fixing the head row leaves a chain that verifies link by link; it no longer reaches a size
 * the log signed, and this says so. (A rebuilt tree signed again hides it from this check, not
 * from a witness that kept an earlier checkpoint: ledger:witness.)
 */
import { and, eq } from 'drizzle-orm';
import type { Executor } from '@/db';
import { ledgerCheckpoints, ledgerSigningKeys } from '@/db/schema';
import type { ChainBreak, CheckpointCheck, VerifyReport } from './chain';
import { newestCheckpoint } from './checkpoints';
import { verifyNote, vkeyOf, parseVkey } from './note';

/** A signed checkpoint as a verifier needs it: the note, and the public key of the key that signed it. */
export interface SignedCheckpoint {
  treeSize: number;
  root: Buffer;
  note: string;
  keyId: string;
  /** The signing key's name (the origin) and public key; null when the key is not on record. */
  key: { name: string; publicKey: Buffer } | null;
}

async function withKey(
  db: Executor,
  workspaceId: string,
  row: { treeSize: number; root: Buffer; note: string; keyId: string },
): Promise<SignedCheckpoint> {
  const [key] = await db
    .select({ name: ledgerSigningKeys.name, publicKey: ledgerSigningKeys.publicKey })
    .from(ledgerSigningKeys)
    .where(and(eq(ledgerSigningKeys.workspaceId, workspaceId), eq(ledgerSigningKeys.keyId, row.keyId)));
  return { treeSize: row.treeSize, root: row.root, note: row.note, keyId: row.keyId, key: key ?? null };
}

/**
 * The newest checkpoint signed for the workspace, or null before the first. Read it before the
 * head: a checkpoint is never signed past the head it was made from, so the head read after it
 * reaches its size unless events were cut.
 */
export async function readSignedCheckpoint(db: Executor, workspaceId: string): Promise<SignedCheckpoint | null> {
  const row = await newestCheckpoint(db, workspaceId);
  return row ? withKey(db, workspaceId, row) : null;
}

/** The checkpoint of `treeSize` with `root` (a verification in steps names the one its first step read). */
export async function readCheckpointOf(
  db: Executor,
  workspaceId: string,
  treeSize: number,
  root: Buffer,
): Promise<SignedCheckpoint | null> {
  const [row] = await db
    .select()
    .from(ledgerCheckpoints)
    .where(and(eq(ledgerCheckpoints.workspaceId, workspaceId), eq(ledgerCheckpoints.treeSize, treeSize), eq(ledgerCheckpoints.root, root)));
  return row ? withKey(db, workspaceId, row) : null;
}

function signatureHolds(signed: SignedCheckpoint): boolean {
  if (!signed.key) return false;
  try {
    return verifyNote(signed.note, parseVkey(vkeyOf({ name: signed.key.name, type: 0x01, publicKey: signed.key.publicKey })));
  } catch {
    return false;
  }
}

/**
 * The report of a chain verified from its first event, judged against `signed` too. `root` is the
 * Merkle root of the chain's first `signed.treeSize` events, computed while verifying them (null
 * when the chain did not reach that size intact). A break of the chain at or before the signed
 * size stays the first break (the root cannot be judged past it); otherwise a checkpoint that does
 * not hold is the break, named at the first event it vouches for that the chain lacks, or at its size.
 */
export function judgeAgainstCheckpoint(report: VerifyReport, signed: SignedCheckpoint | null, root: Buffer | null): VerifyReport {
  if (!signed) return { ...report, checkpoint: null };
  const size = signed.treeSize;
  const check: CheckpointCheck = { treeSize: size, rootHash: signed.root.toString('base64'), keyId: signed.keyId, holds: null };
  const chainBreak = report.firstBreak;
  if (chainBreak && chainBreak.sequence <= size) return { ...report, checkpoint: check };
  let broken: ChainBreak | null = null;
  if (!signatureHolds(signed)) {
    broken = {
      sequence: size,
      eventId: null,
      reason: 'checkpoint_signature_invalid',
      expected: `a note signed by key ${signed.keyId}`,
      actual: signed.key ? 'a signature that does not verify with it' : 'no such key on record',
    };
  } else if (report.lastVerified.sequence < size) {
    broken = {
      sequence: report.lastVerified.sequence + 1,
      eventId: null,
      reason: 'checkpoint_beyond_head',
      expected: `a chain of at least ${size} events (the signed checkpoint's tree size)`,
      actual: `the chain ends at ${report.lastVerified.sequence}`,
    };
  } else if (!root || !root.equals(signed.root)) {
    broken = {
      sequence: size,
      eventId: null,
      reason: 'checkpoint_root_mismatch',
      expected: signed.root.toString('base64'),
      actual: root?.toString('base64') ?? 'no root computed',
    };
  }
  if (!broken) return { ...report, checkpoint: { ...check, holds: true } };
  return { ...report, verified: false, firstBreak: broken, checkpoint: { ...check, holds: false } };
}
