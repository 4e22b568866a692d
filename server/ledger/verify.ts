/**
 * Verifying a workspace's chain from the database: `verifyWorkspace` feeds ChainVerifier (chain.ts)
 * in pages, `verifyStep` a page at a time for the web interface's progress bar. (npm run
 * ledger:verify uses every core: verify-parallel.ts.)
 */
import type { Executor } from '@/db';
import { ChainVerifier, GENESIS, type ChainPosition, type VerifyReport } from './chain';
import { readEvents, readHead } from './read';

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
