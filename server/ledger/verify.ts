/**
 * Verifying a workspace's chain from the database: `verifyWorkspace` feeds ChainVerifier (chain.ts)
 * in pages, `verifyStep` a page at a time for the web interface's progress bar. (npm run
 * ledger:verify uses every core: verify-parallel.ts.)
 */
import type { Executor } from '@/db';
import { ChainVerifier, GENESIS, type ChainPosition, type LeafSink, type VerifyReport } from './chain';
import { TreeAccumulator } from './merkle';
import { AppError } from '@/server/errors';
import { readEventRows, readEvents, readHead } from './read';
import { judgeAgainstCheckpoint, readCheckpointOf, readSignedCheckpoint, type SignedCheckpoint } from './signed';

/** A sink that folds the leaves up to the signed size into `tree` (nothing without a checkpoint). */
function leavesInto(tree: TreeAccumulator, signed: { treeSize: number } | null): LeafSink | undefined {
  return signed ? { upTo: signed.treeSize, add: (leaf) => tree.appendLeaf(leaf) } : undefined;
}

/** The tree's root if it reached the signed size, for judgeAgainstCheckpoint. */
function rootAt(tree: TreeAccumulator, signed: SignedCheckpoint | null): Buffer | null {
  return signed && tree.size === signed.treeSize ? tree.root() : null;
}

export interface VerifyOptions {
  /** Events read per query (2,000 by default): memory holds one page, however long the chain. */
  pageSize?: number;
  /** Told after each page how many events are verified of how many the head says there are. */
  onProgress?: (checked: number, total: number) => void;
}

/**
 * Verifies a workspace's whole chain from the database, a page of events at a time, and against
 * the newest signed checkpoint (signed.ts).
 */
export async function verifyWorkspace(db: Executor, workspaceId: string, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const pageSize = opts.pageSize ?? 2000;
  const signed = await readSignedCheckpoint(db, workspaceId);
  // Read the head next: events appended while we read lie beyond it and are not judged.
  const head = await readHead(db, workspaceId);
  const tree = new TreeAccumulator();
  const verifier = new ChainVerifier(GENESIS, leavesInto(tree, signed));
  let after = 0;
  const end = head?.sequence ?? 0;
  while (after < end) {
    // Text rows: a payload kept as its canonical text is hashed as it is, never parsed.
    const rows = await readEventRows(db, workspaceId, { after, limit: Math.min(pageSize, end - after) });
    if (rows.length === 0) break;
    for (const row of rows) {
      if (!verifier.pushRow(row)) {
        const report = { ...verifier.finish(), head: head ? { sequence: head.sequence, hash: head.headHash } : GENESIS };
        return judgeAgainstCheckpoint(report, signed, rootAt(tree, signed));
      }
    }
    after = Number(rows[rows.length - 1]!.sequence);
    opts.onProgress?.(after, end);
  }
  const report = await beyondHead(db, workspaceId, verifier.finish(head ?? undefined), end);
  return judgeAgainstCheckpoint(report, signed, rootAt(tree, signed));
}

/**
 * Events past the recorded head mean the head was moved back: whatever lies beyond it would
 * otherwise escape verification. (An append that committed after we read the head is not one: it
 * moved the head forward too, so the head is read again before judging.)
 */
export async function beyondHead(db: Executor, workspaceId: string, report: VerifyReport, end: number): Promise<VerifyReport> {
  if (!report.verified) return report;
  const [beyond] = await readEvents(db, workspaceId, { after: end, limit: 1 });
  if (beyond) {
    const now = await readHead(db, workspaceId);
    if (!now || now.sequence < beyond.sequence) {
      return {
        ...report,
        verified: false,
        firstBreak: {
          sequence: beyond.sequence,
          eventId: beyond.id,
          reason: 'head_mismatch',
          expected: `no event after the head at ${now?.sequence ?? end}`,
          actual: `event at sequence ${beyond.sequence}`,
        },
      };
    }
  }
  return report;
}

/** Where a verification done in steps stands between two steps (the web interface's "Verify the chain"). */
export interface VerifyProgress {
  /** The last event verified so far (the genesis position before the first step). */
  position: ChainPosition;
  checkedEvents: number;
  /** The head as read by the first step: the chain is judged up to it. Null before the first step. */
  head: ChainPosition | null;
  /**
   * The signed checkpoint the first step read (its size and base64 root; null when there was none),
   * and the Merkle tree of the events verified so far up to its size: the subtrees' hashes
   * (TreeAccumulator.hashes, base64). Absent before the first step.
   */
  signed?: { treeSize: number; rootHash: string; tree: string[] } | null;
}

/**
 * One step of a verification of a workspace's chain: up to `limit` events after `progress.position`
 * pushed through ChainVerifier, so that a caller can show progress between steps. The first step
 * reads the head; the last compares it, as verifyWorkspace does. Returns the report when done
 * (whole chain checked, or a break found), else the progress to pass to the next step.
 */
export async function verifyStep(
  db: Executor,
  workspaceId: string,
  progress: VerifyProgress,
  limit: number,
): Promise<{ done: true; report: VerifyReport } | { done: false; progress: VerifyProgress }> {
  let recorded: ChainPosition;
  let signed: SignedCheckpoint | null;
  if (progress.head && progress.signed !== undefined) {
    recorded = progress.head;
    signed =
      progress.signed &&
      (await readCheckpointOf(db, workspaceId, progress.signed.treeSize, Buffer.from(progress.signed.rootHash, 'base64')));
    // The progress comes back from the caller: a checkpoint it names that is not on record (made
    // up, or gone with a rebuilt tree) is its mistake, and the verification starts again.
    if (progress.signed && !signed)
      throw new AppError(
        'validation_failed',
        `The checkpoint of tree size ${progress.signed.treeSize} the verification started from is not on record. Start the verification again.`,
        { field: 'progress.signed' },
      );
  } else {
    signed = await readSignedCheckpoint(db, workspaceId);
    const head = await readHead(db, workspaceId);
    recorded = head ? { sequence: head.sequence, hash: head.headHash } : GENESIS;
  }
  const leaves = signed ? Math.min(progress.position.sequence, signed.treeSize) : 0;
  const subtrees = (progress.signed?.tree ?? []).map((h) => Buffer.from(h, 'base64'));
  if (subtrees.length !== TreeAccumulator.subtreesOf(leaves))
    throw new AppError(
      'validation_failed',
      `The verification's tree has ${subtrees.length} subtrees; ${leaves} events make ${TreeAccumulator.subtreesOf(leaves)}. Start the verification again.`,
      { field: 'progress.signed.tree' },
    );
  const tree = TreeAccumulator.resume(leaves, subtrees);
  const verifier = new ChainVerifier(progress.position, leavesInto(tree, signed));
  const end = recorded.sequence;
  const page =
    progress.position.sequence < end
      ? await readEventRows(db, workspaceId, {
          after: progress.position.sequence,
          limit: Math.min(limit, end - progress.position.sequence),
        })
      : [];
  const total = (report: VerifyReport): VerifyReport =>
    judgeAgainstCheckpoint(
      {
        ...report,
        checkedEvents: progress.checkedEvents + report.checkedEvents,
        head: recorded,
      },
      signed,
      rootAt(tree, signed),
    );
  for (const row of page) {
    if (!verifier.pushRow(row)) return { done: true, report: total(verifier.finish()) };
  }
  const last = page.at(-1);
  if (last && Number(last.sequence) < end) {
    const partial = verifier.finish();
    return {
      done: false,
      progress: {
        position: partial.lastVerified,
        checkedEvents: progress.checkedEvents + partial.checkedEvents,
        head: recorded,
        signed: signed && {
          treeSize: signed.treeSize,
          rootHash: signed.root.toString('base64'),
          tree: tree.hashes.map((h) => Buffer.from(h).toString('base64')),
        },
      },
    };
  }
  const report = verifier.finish({ sequence: recorded.sequence, headHash: recorded.hash });
  const whole = await beyondHead(
    db,
    workspaceId,
    { ...report, checkedEvents: progress.checkedEvents + report.checkedEvents, head: recorded },
    end,
  );
  return { done: true, report: judgeAgainstCheckpoint(whole, signed, rootAt(tree, signed)) };
}
