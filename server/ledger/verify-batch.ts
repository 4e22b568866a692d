/**
 * Verifying a chain in batches (verify-parallel.ts): what a worker thread does with a batch of
 * events (parse it, run ChainVerifier over it), and ChainJoin, which puts the batches' results
 * back together in order. Pure, and apart from the pool, so that a worker loads only this, the
 * chain verifier and the canonical forms (no database code).
 */
import { eventProblem } from './bundle-shape';
import type { EventsBatch } from './bundle-scan';
import type { LedgerEvent } from './canonical';
import { ChainVerifier, GENESIS, type ChainPosition, type VerifyReport } from './chain';
import { rangeNodes, type HashedNode, type TreeAccumulator } from './merkle';
import { eventRowsOfCopyText, type EventTextRow } from './event-rows';

/**
 * Bytes of event text per batch. Under 128 KiB a batch's text, decoded in the worker, is an
 * ordinary young object, collected with the rest of the batch's garbage; larger, it goes to V8's
 * large-object space, which only a full collection frees. Measured on a 1,000,000-event ledger
 * (docs/performance.md): 96 KiB batches against 256 KiB, peak RSS 157 against 207 MiB, and 5 % faster.
 */
export const BATCH_BYTES = 96 * 1024;

/**
 * A batch of a bundle's events array (bundle-scan.ts), with what the worker is to do with it:
 * hash it (until the chain is found broken, after which batches are only checked for their shape),
 * and give the eventHash at sequence `want` when the batch has it.
 */
export interface BundleBatch extends EventsBatch {
  hashing: boolean;
  want: number | null;
  treeSize?: number;
}

/**
 * A batch for a worker: COPY text (whole lines, the first `length` bytes of `copy`), text rows, or
 * a bundle's; with `treeSize`, the Merkle tree size whose root the verification is after (the
 * signed checkpoint's).
 */
export type Batch = ({ copy: ArrayBuffer; length: number } | { rows: EventTextRow[] } | BundleBatch) & { treeSize?: number };

/** What a worker found in one batch, taken on trust of the batch's first link (ChainJoin checks it). */
export interface BatchResult {
  count: number;
  first: { sequence: number; id: string; previousHash: string } | null;
  report: VerifyReport;
  /**
   * The Merkle tree's nodes over the batch's verified events up to the tree size asked for,
   * left to right (merkle.ts rangeNodes): the join appends them to the tree so far.
   */
  tree: HashedNode[];
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** What a worker found in a bundle's batch, beside the chain. */
export interface BundleBatchResult extends BatchResult {
  /** The batch is not JSON (the bundle's syntax). */
  syntax: string | null;
  /** The first element that is not an event, as "events[i].field: problem". */
  problem: string | null;
  /** The workspace of the batch's first event and every one after it that differs from the one before. */
  workspaces: { sequence: number; workspaceId: string }[];
  /** The eventHash at the sequence asked for, when the batch has it. */
  wanted: string | null;
}

/** Parses a bundle's batch, checks that each element is an event, and (when asked) verifies them. */
export function verifyBundleBatch(batch: BundleBatch): BundleBatchResult {
  const result: BundleBatchResult = { ...verifyBatch([]), syntax: null, problem: null, workspaces: [], wanted: null };
  let elements: unknown[];
  try {
    elements = JSON.parse(decoder.decode(new Uint8Array(batch.json, 0, batch.length))) as unknown[];
  } catch (err) {
    return { ...result, syntax: `"events": ${(err as Error).message}` };
  }
  for (let i = 0; i < elements.length; i++) {
    const problem = eventProblem(elements[i], batch.firstIndex + i);
    if (problem) return { ...result, problem };
  }
  const events = elements as LedgerEvent[];
  let workspaceId: string | null = null;
  for (const event of events) {
    if (event.workspaceId !== workspaceId)
      result.workspaces.push({ sequence: event.sequence, workspaceId: (workspaceId = event.workspaceId) });
    if (event.sequence === batch.want) result.wanted ??= event.eventHash;
  }
  return batch.hashing ? { ...result, ...verifyBatch(events, batch.treeSize) } : result;
}

/** The rows of a batch from the database, in order. */
export function rowsOfBatch(batch: Exclude<Batch, BundleBatch>): EventTextRow[] {
  return 'copy' in batch ? eventRowsOfCopyText(decoder.decode(new Uint8Array(batch.copy, 0, batch.length))) : batch.rows;
}

/**
 * Runs ChainVerifier over a batch as if the chain before it ended where its first event says
 * (its sequence − 1 and its previousHash): every digest is computed and every link after the
 * first is checked. What a worker thread does with a bundle's events.
 */
export function verifyBatch(events: readonly LedgerEvent[], treeSize = 0): BatchResult {
  const head = events[0];
  return verifyEach(events, head && { sequence: head.sequence, id: head.id, previousHash: head.previousHash }, treeSize, (v, e) =>
    v.push(e),
  );
}

/** verifyBatch over rows as the database keeps them (ChainVerifier.pushRow): what a worker does with a batch from the database. */
export function verifyRows(rows: readonly EventTextRow[], treeSize = 0): BatchResult {
  const head = rows[0];
  return verifyEach(rows, head && { sequence: Number(head.sequence), id: head.id, previousHash: head.previous_hash }, treeSize, (v, r) =>
    v.pushRow(r),
  );
}

function verifyEach<T>(
  items: readonly T[],
  first: BatchResult['first'] | undefined,
  treeSize: number,
  push: (verifier: ChainVerifier, item: T) => boolean,
): BatchResult {
  if (!first) return { count: 0, first: null, report: new ChainVerifier().finish(), tree: [] };
  const leaves: Buffer[] = [];
  const verifier = new ChainVerifier(
    { sequence: first.sequence - 1, hash: first.previousHash },
    { upTo: treeSize, add: (leaf) => leaves.push(leaf) },
  );
  for (const item of items) if (!push(verifier, item)) break;
  return {
    count: items.length,
    first,
    report: verifier.finish(),
    // Leaf i is the event at sequence i + 1.
    tree: leaves.length > 0 ? rangeNodes(first.sequence - 1, leaves) : [],
  };
}

/**
 * Batches' results joined in chain order into what one ChainVerifier would report: a batch's first
 * event is checked against the batch before it in ChainVerifier's order (sequence, then the
 * payload digest the worker checked, then the link, then the event hash).
 */
export class ChainJoin {
  private checked = 0;
  private broken: VerifyReport['firstBreak'] = null;

  /**
   * Joins a chain that starts after `last` (the genesis position for a whole chain); with `tree`,
   * each batch's Merkle nodes are appended to it as the batch joins.
   */
  constructor(
    private last: ChainPosition = GENESIS,
    private readonly tree?: TreeAccumulator,
  ) {}

  /** Adds the next batch's result; false (and nothing more is taken) once the chain is broken. */
  push(batch: BatchResult): boolean {
    if (this.broken) return false;
    const { first, report } = batch;
    if (!first) return true;
    const breakAtFirst = report.firstBreak?.sequence === first.sequence && report.checkedEvents === 0 ? report.firstBreak : null;
    if (first.sequence !== this.last.sequence + 1) {
      this.broken = {
        sequence: first.sequence,
        eventId: first.id,
        reason: 'sequence_gap',
        expected: String(this.last.sequence + 1),
        actual: String(first.sequence),
      };
    } else if (breakAtFirst?.reason === 'payload_digest_mismatch') {
      this.broken = breakAtFirst;
    } else if (first.previousHash !== this.last.hash) {
      this.broken = {
        sequence: first.sequence,
        eventId: first.id,
        reason: 'previous_hash_mismatch',
        expected: this.last.hash,
        actual: first.previousHash,
      };
    } else {
      this.checked += report.checkedEvents;
      if (report.checkedEvents > 0) this.last = report.lastVerified;
      for (const node of batch.tree) this.tree?.append(node.level, node.hash);
      this.broken = report.firstBreak;
    }
    return this.broken === null;
  }

  /** The report, with the recorded head compared as ChainVerifier.finish does. */
  finish(head?: { sequence: number; headHash: string }): VerifyReport {
    const tail = new ChainVerifier(this.last).finish(this.broken ? undefined : head);
    return {
      verified: this.broken === null && tail.verified,
      checkedEvents: this.checked,
      lastVerified: this.last,
      head: head ? { sequence: head.sequence, hash: head.headHash } : GENESIS,
      firstBreak: this.broken ?? tail.firstBreak,
    };
  }
}
