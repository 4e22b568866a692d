/**
 * Ledger bundles: a workspace's events exported with the head they lead to, so that anyone can
 * check them with no database and no access to the service (`npm run ledger:export`, then
 * `npm run ledger:verify -- --bundle <file>`; docs/verification.md, "Offline proof").
 *
 * A bundle holds the events from some sequence on, the position of the chain just before them
 * (`from`: sequence 0 and the genesis hash for a whole chain), the head they end at, and the head
 * of the export it follows (`previous`). Checking one is ChainVerifier over its events from `from`,
 * then the head; checking that it extends an earlier bundle is finding that bundle's head on its
 * chain: either as its `from`, or as one of its events. A later export that passes both cannot have
 * rewritten anything the earlier one showed, because every event's hash covers the one before it.
 */
import type { Executor } from '@/db';
import { GENESIS_HASH } from '@/db/schema';
import { BUNDLE_FORMAT, bundleProblem, type BundleFrame, type BundleHead, type LedgerBundle } from './bundle-shape';
import { readEvents, readHead } from './read';
import { judgeBundleCheckpoint } from './bundle-checkpoint';
import { ChainVerifier, type ChainBreak, type ChainPosition, type VerifyReport } from './chain';
import { TreeAccumulator } from './merkle';

export type { BundleFrame, BundleHead, LedgerBundle } from './bundle-shape';

/**
 * Where the bundle of `workspaceId`'s events after sequence `after` (0: the whole chain) starts and
 * ends: the head as read now, and the position before its first event. `previous` is the head of
 * the export this one follows, recorded so the two can be checked together later.
 */
export async function bundleFrame(
  db: Executor,
  workspaceId: string,
  opts: { after?: number; previous?: BundleHead | null; at?: number } = {},
): Promise<BundleFrame> {
  let at = (await readHead(db, workspaceId)) ?? { sequence: 0, headHash: GENESIS_HASH };
  // Ending at an earlier event (a signed checkpoint's size: bundle-export.ts) rather than the head.
  if (opts.at !== undefined && opts.at > 0 && opts.at < at.sequence) {
    const [event] = await readEvents(db, workspaceId, { after: opts.at - 1, limit: 1 });
    if (!event || event.sequence !== opts.at) throw new Error(`no event at sequence ${opts.at} in workspace ${workspaceId}`);
    at = { sequence: event.sequence, headHash: event.eventHash };
  }
  const after = Math.min(opts.after ?? 0, at.sequence);
  let from = { sequence: 0, hash: GENESIS_HASH };
  if (after > 0) {
    const [before] = await readEvents(db, workspaceId, { after: after - 1, limit: 1 });
    if (!before || before.sequence !== after) throw new Error(`no event at sequence ${after} in workspace ${workspaceId}`);
    from = { sequence: after, hash: before.eventHash };
  }
  return {
    format: BUNDLE_FORMAT,
    workspaceId,
    exportedAt: new Date().toISOString(),
    from,
    head: { sequence: at.sequence, headHash: at.headHash },
    previous: opts.previous ?? null,
  };
}

/**
 * The frame's events as JSON text (as GET /events/stream serves them), in pages of `pageSize` up to
 * its head: only a page is held at a time. (Parsed and written again: building the text from the
 * ledger's text columns, as the events page does, made the export 1.5 × slower, most of it in the
 * garbage collector.)
 */
export async function* eventPages(db: Executor, frame: BundleFrame, pageSize = 1000): AsyncGenerator<string[]> {
  for (let last = frame.from.sequence; last < frame.head.sequence;) {
    const page = await readEvents(db, frame.workspaceId, { after: last, limit: Math.min(pageSize, frame.head.sequence - last) });
    if (page.length === 0) return;
    yield page.map((e) => JSON.stringify(e));
    last = page[page.length - 1]!.sequence;
  }
}

/**
 * The bundle's text, a piece at a time: what npm run ledger:export writes and the web interface
 * downloads. The frame's members come first, then the events (`pages` of their JSON texts) one to
 * a line: however long the ledger, only a page is held, and a reader can check the events as they
 * come (bundle-file.ts).
 */
export async function* bundleText(frame: BundleFrame, pages: AsyncIterable<string[]> | Iterable<string[]>): AsyncGenerator<string> {
  const { format, workspaceId, exportedAt, from, head, previous, checkpoint } = frame;
  yield JSON.stringify({ format, workspaceId, exportedAt, from, head, previous, checkpoint }).slice(0, -1) + ',\n"events":[';
  let first = true;
  for await (const page of pages) {
    if (page.length === 0) continue;
    // Joined in one go (a flat string), not appended event by event (a rope of thousands of pieces).
    yield (first ? '\n' : ',\n') + page.join(',\n');
    first = false;
  }
  yield '\n]}\n';
}

type BundleBreakReason = ChainBreak['reason'] | 'not_a_bundle' | 'other_workspace' | 'does_not_extend';

export interface BundleReport extends Omit<VerifyReport, 'firstBreak'> {
  firstBreak: (Omit<ChainBreak, 'reason'> & { reason: BundleBreakReason }) | null;
  /**
   * Whether the bundle was shown to extend an earlier one: true only when the earlier bundle was
   * given to check it against; false when it does not (or the head it names as its previous is not
   * on its own chain); null when no earlier bundle was checked.
   */
  extendsPrevious: boolean | null;
  /**
   * The bundle names an earlier export it follows (`previous`), and that export was not given: only
   * that the head it names lies on the bundle's own chain was checked, not that an export with that
   * head exists. Give the earlier bundle to check it (extendsPrevious).
   */
  continuesUncheckedExport: boolean;
}

/**
 * What checking a bundle found, before it is judged against an earlier one: gathered from a bundle
 * in memory (factsOfBundle) or from a file as it streams (bundle-file.ts), and judged by judgeBundle,
 * so that both report the same.
 */
export interface BundleFacts {
  /** Why it is not a bundle (the first problem), or null. */
  problem: string | null;
  /** Its members other than its events (meaningful when `problem` is null). */
  frame: BundleFrame;
  /** ChainVerifier's report over its events from `frame.from`, finished with `frame.head`. */
  chain: VerifyReport;
  /** The first event that belongs to another workspace than the bundle's. */
  otherWorkspace: { sequence: number; workspaceId: string } | null;
  /** The eventHash the bundle's chain has at `sequence`; undefined when the bundle does not cover it. */
  hashAt(sequence: number): string | undefined;
  /** The Merkle nodes of the events verified, from `frame.from.sequence` (for its checkpoint's root). */
  tree: TreeAccumulator | null;
}

/** Every event of a bundle gives its leaf to the tree: its checkpoint is of the bundle's head. */
export const WHOLE_BUNDLE = Number.MAX_SAFE_INTEGER;

/** The facts of a bundle in memory (parsed JSON of unknown shape). */
function factsOfBundle(bundle: unknown): BundleFacts {
  const problem = bundleProblem(bundle);
  if (problem) return notABundle(problem);
  const b = bundle as LedgerBundle;
  const tree = new TreeAccumulator(b.from.sequence);
  const verifier = new ChainVerifier(b.from, { upTo: WHOLE_BUNDLE, add: (leaf) => tree.appendLeaf(leaf) });
  // Any string is hashed as it is: a bundle is judged by its hashes, not by what the service writes.
  for (const e of b.events) if (!verifier.push(e)) break;
  const other = b.events.find((e) => e.workspaceId !== b.workspaceId);
  return {
    problem: null,
    frame: b,
    chain: verifier.finish(b.head),
    otherWorkspace: other ? { sequence: other.sequence, workspaceId: other.workspaceId } : null,
    hashAt: (sequence) => (sequence === b.from.sequence ? b.from.hash : b.events.find((e) => e.sequence === sequence)?.eventHash),
    tree,
  };
}

/** The facts of something that is not a bundle. */
export function notABundle(problem: string): BundleFacts {
  const genesis: ChainPosition = { sequence: 0, hash: GENESIS_HASH };
  return {
    problem,
    frame: {
      format: BUNDLE_FORMAT,
      workspaceId: '',
      exportedAt: '',
      from: genesis,
      head: { sequence: 0, headHash: GENESIS_HASH },
      previous: null,
    },
    chain: { verified: false, checkedEvents: 0, lastVerified: genesis, head: genesis, firstBreak: null },
    otherWorkspace: null,
    hashAt: () => undefined,
    tree: null,
  };
}

/** How a bundle is checked: `vkey` pins the verifier key its checkpoint must be signed with (--vkey). */
export interface BundleCheckOptions {
  vkey?: string;
}

/**
 * Checks a bundle on its own, and, given the earlier bundle it claims to follow, that it extends it.
 * `bundle` and `earlier` are parsed JSON of unknown shape: anything that is not a bundle is
 * reported as `not_a_bundle`, never thrown.
 */
export function verifyBundle(bundle: unknown, earlier?: unknown, opts: BundleCheckOptions = {}): BundleReport {
  return judgeBundle(factsOfBundle(bundle), earlier === undefined ? undefined : factsOfBundle(earlier), opts);
}

/**
 * The report on a bundle from its facts (and the earlier bundle's, when it names one to extend),
 * then on its signed checkpoint once everything else holds.
 */
export function judgeBundle(facts: BundleFacts, earlier?: BundleFacts, opts: BundleCheckOptions = {}): BundleReport {
  const report = judgeChain(facts, earlier);
  if (facts.problem || !report.verified) return report;
  const { checkpoint, broken } = judgeBundleCheckpoint(facts.frame, facts.tree, opts.vkey);
  if (!broken) return { ...report, checkpoint };
  return { ...report, verified: false, firstBreak: broken, checkpoint };
}

function judgeChain(facts: BundleFacts, earlier?: BundleFacts): BundleReport {
  if (facts.problem) return refused('not_a_bundle', 'a ledger bundle (' + BUNDLE_FORMAT + ')', facts.problem);
  const b = facts.frame;
  const report: BundleReport = {
    ...facts.chain,
    extendsPrevious: null,
    continuesUncheckedExport: earlier === undefined && b.previous !== null,
  };
  if (!report.verified) return report;
  const other = facts.otherWorkspace;
  if (other) return broken(report, other.sequence, 'other_workspace', b.workspaceId, other.workspaceId);

  // The head this bundle says it follows must lie on its chain; given the earlier bundle itself,
  // that bundle must verify, belong to the same workspace, and end at that head.
  let previous = b.previous;
  if (earlier !== undefined) {
    const before = judgeBundle(earlier);
    if (!before.verified)
      return broken(report, before.firstBreak?.sequence ?? 0, 'does_not_extend', 'an earlier bundle that verifies', 'one that does not');
    const e = earlier.frame;
    if (e.workspaceId !== b.workspaceId) return broken(report, 0, 'other_workspace', e.workspaceId, b.workspaceId);
    if (previous && (previous.sequence !== e.head.sequence || previous.headHash !== e.head.headHash)) {
      return broken(
        report,
        previous.sequence,
        'does_not_extend',
        `${e.head.sequence} ${e.head.headHash}`,
        `${previous.sequence} ${previous.headHash}`,
      );
    }
    previous = e.head;
  }
  if (!previous) return report;
  const found = facts.hashAt(previous.sequence);
  if (found === undefined) {
    return broken(
      report,
      previous.sequence,
      'does_not_extend',
      `the chain through sequence ${previous.sequence}`,
      `a bundle from sequence ${b.from.sequence + 1} to ${b.head.sequence}`,
    );
  }
  if (found !== previous.headHash) return broken(report, previous.sequence, 'does_not_extend', previous.headHash, found);
  // The bundle's own word that it follows an export is no evidence that it extends one.
  return earlier === undefined ? report : { ...report, extendsPrevious: true };
}

function broken(report: BundleReport, sequence: number, reason: BundleBreakReason, expected: string, actual: string): BundleReport {
  return { ...report, verified: false, extendsPrevious: false, firstBreak: { sequence, eventId: null, reason, expected, actual } };
}

function refused(reason: BundleBreakReason, expected: string, actual: string): BundleReport {
  return {
    verified: false,
    checkedEvents: 0,
    lastVerified: { sequence: 0, hash: GENESIS_HASH },
    head: { sequence: 0, hash: GENESIS_HASH },
    extendsPrevious: null,
    continuesUncheckedExport: false,
    firstBreak: { sequence: 0, eventId: null, reason, expected, actual },
  };
}
