/**
 * Recomputing a chain: every payloadDigest and eventHash from the event's own fields, every
 * previousHash against the event before it, sequences 1, 2, 3 … without gaps, and the head.
 * `ChainVerifier` is pure (it also checks exported bundles and live streams); `verifyWorkspace`
 * feeds it from the database in pages.
 */
import type { Executor } from '@/db';
import { GENESIS_HASH } from '@/db/schema';
import { canonicalJson, eventCanonicalText, sha256Hex, type LedgerEvent } from './canonical';
import { readEvents, readHead } from './read';

type BreakReason = 'sequence_gap' | 'payload_digest_mismatch' | 'event_hash_mismatch' | 'previous_hash_mismatch' | 'head_mismatch';

export interface ChainBreak {
  sequence: number;
  eventId: string | null;
  reason: BreakReason;
  expected: string;
  actual: string;
}

/** A place on a chain: an event's sequence and eventHash (sequence 0 and the genesis hash before the first). */
interface ChainPosition {
  sequence: number;
  hash: string;
}

/**
 * What a verification found, in the same words wherever it is shown: GET /ledger/verify serves it,
 * and npm run ledger:verify prints it (for a workspace or a bundle).
 */
export interface VerifyReport {
  ok: boolean;
  checkedEvents: number;
  /** The last event of the intact part of the chain. */
  lastVerified: ChainPosition;
  /** The head as recorded (ledger_heads, or the bundle's); the genesis position when there is none. */
  head: ChainPosition;
  firstBreak: ChainBreak | null;
}

const GENESIS: ChainPosition = { sequence: 0, hash: GENESIS_HASH };

export class ChainVerifier {
  private checked = 0;
  private lastSequence: number;
  private lastHash: string;
  private broken: ChainBreak | null = null;

  /** Starts after `from` (sequence 0 and the genesis hash for a whole chain). */
  constructor(from: { sequence: number; hash: string } = { sequence: 0, hash: GENESIS_HASH }) {
    this.lastSequence = from.sequence;
    this.lastHash = from.hash;
  }

  /** Checks the next event; returns false (and stops checking) at the first break. */
  push(event: LedgerEvent): boolean {
    if (this.broken) return false;
    const fail = (reason: BreakReason, expected: string, actual: string) => {
      this.broken = { sequence: event.sequence, eventId: event.id, reason, expected, actual };
      return false;
    };
    if (event.sequence !== this.lastSequence + 1) return fail('sequence_gap', String(this.lastSequence + 1), String(event.sequence));
    // The payload is serialised once: for its digest, and inside the event's own canonical form.
    const payloadText = canonicalJson(event.payload);
    const payloadDigest = `sha256:${sha256Hex(payloadText)}`;
    if (payloadDigest !== event.payloadDigest) return fail('payload_digest_mismatch', payloadDigest, event.payloadDigest);
    if (event.previousHash !== this.lastHash) return fail('previous_hash_mismatch', this.lastHash, event.previousHash);
    const eventHash = `sha256:${sha256Hex(eventCanonicalText(event, payloadText))}`;
    if (eventHash !== event.eventHash) return fail('event_hash_mismatch', eventHash, event.eventHash);
    this.checked++;
    this.lastSequence = event.sequence;
    this.lastHash = event.eventHash;
    return true;
  }

  /** Compares the recorded head (when given) with where the chain ended. */
  finish(head?: { sequence: number; headHash: string }): VerifyReport {
    if (!this.broken && head && (head.sequence !== this.lastSequence || head.headHash !== this.lastHash)) {
      this.broken = {
        sequence: head.sequence,
        eventId: null,
        reason: 'head_mismatch',
        expected: `${this.lastSequence} ${this.lastHash}`,
        actual: `${head.sequence} ${head.headHash}`,
      };
    }
    return {
      ok: this.broken === null,
      checkedEvents: this.checked,
      lastVerified: { sequence: this.lastSequence, hash: this.lastHash },
      head: head ? { sequence: head.sequence, hash: head.headHash } : GENESIS,
      firstBreak: this.broken,
    };
  }
}

export interface VerifyOptions {
  /** Events read per query (2,000 by default): memory holds one page, however long the chain. */
  pageSize?: number;
  /** Told after each page how many events are verified of how many the head says there are. */
  onProgress?: (checked: number, total: number) => void;
}

/** Verifies a workspace's whole chain from the database, a page of events at a time. */
export async function verifyWorkspace(db: Executor, workspaceId: string, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const pageSize = opts.pageSize ?? 2000;
  // Read the head first: events appended while we read lie beyond it and are not judged.
  const head = await readHead(db, workspaceId);
  const verifier = new ChainVerifier();
  let after = 0;
  const end = head?.sequence ?? 0;
  while (after < end) {
    const page = await readEvents(db, workspaceId, { after, limit: Math.min(pageSize, end - after) });
    if (page.length === 0) break;
    for (const event of page) {
      if (!verifier.push(event)) return { ...verifier.finish(), head: head ? { sequence: head.sequence, hash: head.headHash } : GENESIS };
    }
    after = page[page.length - 1]!.sequence;
    opts.onProgress?.(after, end);
  }
  return beyondHead(db, workspaceId, verifier.finish(head ?? undefined), end);
}

/**
 * Events past the recorded head mean the head was moved back: whatever lies beyond it would
 * otherwise escape verification. (An append that committed after we read the head is not one: it
 * moved the head forward too, so the head is read again before judging.)
 */
async function beyondHead(db: Executor, workspaceId: string, report: VerifyReport, end: number): Promise<VerifyReport> {
  if (!report.ok) return report;
  const [beyond] = await readEvents(db, workspaceId, { after: end, limit: 1 });
  if (beyond) {
    const now = await readHead(db, workspaceId);
    if (!now || now.sequence < beyond.sequence) {
      return {
        ...report,
        ok: false,
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
  if (progress.head) recorded = progress.head;
  else {
    const head = await readHead(db, workspaceId);
    recorded = head ? { sequence: head.sequence, hash: head.headHash } : GENESIS;
  }
  const verifier = new ChainVerifier(progress.position);
  const end = recorded.sequence;
  const page =
    progress.position.sequence < end
      ? await readEvents(db, workspaceId, { after: progress.position.sequence, limit: Math.min(limit, end - progress.position.sequence) })
      : [];
  const total = (report: VerifyReport): VerifyReport => ({
    ...report,
    checkedEvents: progress.checkedEvents + report.checkedEvents,
    head: recorded,
  });
  for (const event of page) {
    if (!verifier.push(event)) return { done: true, report: total(verifier.finish()) };
  }
  const last = page.at(-1);
  if (last && last.sequence < end) {
    const partial = verifier.finish();
    return {
      done: false,
      progress: { position: partial.lastVerified, checkedEvents: progress.checkedEvents + partial.checkedEvents, head: recorded },
    };
  }
  const report = total(verifier.finish({ sequence: recorded.sequence, headHash: recorded.hash }));
  return { done: true, report: await beyondHead(db, workspaceId, report, end) };
}

export { GENESIS };
