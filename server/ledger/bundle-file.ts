/**
 * Checking a bundle file of any length in flat memory, on every core (npm run ledger:verify --
 * --bundle): the file is read in chunks, cut into batches of whole events (bundle-scan.ts), and
 * the worker threads of verify-parallel.ts parse, shape-check and hash each batch while this thread
 * joins the batches in order (ChainJoin). The facts gathered are judged by judgeBundle (bundle.ts),
 * exactly as a bundle in memory is, so the report is verifyBundle's.
 */
import { createReadStream } from 'node:fs';
import { availableParallelism } from 'node:os';
import { judgeBundle, notABundle, WHOLE_BUNDLE, type BundleFacts, type BundleReport } from './bundle';
import { BundleScanner, BundleSyntaxError } from './bundle-scan';
import { frameProblem, type BundleFrame } from './bundle-shape';
import type { LedgerEvent } from './canonical';
import type { ChainPosition } from './chain';
import { TreeAccumulator } from './merkle';
import { ChainJoin, type BundleBatchResult } from './verify-batch';
import { VerifierPool } from './verify-parallel';

export { BundleSyntaxError } from './bundle-scan';

export interface BundleFileOptions {
  /** An earlier bundle file this one must extend (--previous). */
  previous?: string;
  /** Worker threads (default: one per core). */
  workers?: number;
  /** Bytes of events per batch (BATCH_BYTES by default). */
  batchBytes?: number;
  /** Called as batches are joined: events verified, and how many the bundle says it holds. */
  onProgress?: (checked: number, total: number) => void;
  /** The verifier key the bundle's checkpoint must be signed with (--vkey). */
  vkey?: string;
}

/** Reads a file chunk by chunk (1 MiB reads). */
function chunksOf(file: string): AsyncIterable<Buffer> {
  return createReadStream(file, { highWaterMark: 1024 * 1024 });
}

const isPosition = (v: unknown): v is ChainPosition =>
  typeof v === 'object' &&
  v !== null &&
  Number.isSafeInteger((v as ChainPosition).sequence) &&
  typeof (v as ChainPosition).hash === 'string';

/** The members a scanner read, `events` standing for the array it did not keep (so frameProblem sees it there). */
function membersOf(scanner: BundleScanner): Record<string, unknown> {
  const members = Object.fromEntries(scanner.members) as Record<string, unknown>;
  if (scanner.events !== 'absent') members.events = scanner.events === 'array' ? [] : null;
  return members;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The events of a bundle file in order, a batch at a time, parsed on this thread (a restore reads
 * them so, once the file has verified): one batch is held at a time, however long the file.
 */
export async function* bundleEvents(file: string): AsyncGenerator<LedgerEvent[]> {
  const scanner = new BundleScanner();
  for await (const chunk of chunksOf(file)) {
    for (const batch of scanner.push(chunk)) yield JSON.parse(utf8.decode(new Uint8Array(batch.json, 0, batch.length))) as LedgerEvent[];
  }
  scanner.end();
}

/**
 * The members of a bundle file other than its events, read without parsing the events (what
 * ledger:export --previous needs of the earlier export). Throws BundleSyntaxError when the file is
 * not JSON; the members' problem, if any, is returned.
 */
export async function readBundleFrame(file: string): Promise<{ frame: BundleFrame; problem: string | null }> {
  const scanner = new BundleScanner();
  for await (const chunk of chunksOf(file)) scanner.push(chunk);
  scanner.end();
  const members = membersOf(scanner);
  return { frame: members as unknown as BundleFrame, problem: frameProblem(members) };
}

/** One pass over a bundle file: its frame, and what the workers found in its events. */
async function scan(
  file: string,
  pool: VerifierPool,
  workers: number,
  opts: BundleFileOptions & { want: (members: Map<string, unknown>) => number | null; hashing: boolean },
) {
  const scanner = new BundleScanner(opts.batchBytes);
  let join: ChainJoin | null = null;
  let tree: TreeAccumulator | null = null;
  // Results that came before `from` did (a bundle whose members are in another order than ours).
  const early: BundleBatchResult[] = [];
  let hashing = opts.hashing;
  let problem: string | null = null;
  let wanted: { sequence: number; hash: string } | null = null;
  const workspaces: { sequence: number; workspaceId: string }[] = [];
  let checked = 0;

  const joinOf = (): ChainJoin | null => {
    if (join) return join;
    const from = scanner.members.get('from');
    if (!isPosition(from)) return null;
    tree = new TreeAccumulator(from.sequence);
    join = new ChainJoin(from, tree);
    for (const result of early.splice(0)) if (!join.push(result)) hashing = false;
    return join;
  };
  const take = (result: BundleBatchResult, want: number | null) => {
    if (result.syntax) throw new BundleSyntaxError(result.syntax);
    if (problem) return;
    if (result.problem) {
      // Not a bundle: the rest is only read for its syntax.
      problem = result.problem;
      hashing = false;
      return;
    }
    // The workspace of each run of events (one per batch, as a rule), kept to be judged once known.
    for (const w of result.workspaces) if (workspaces[workspaces.length - 1]?.workspaceId !== w.workspaceId) workspaces.push(w);
    if (result.wanted !== null && want !== null) wanted ??= { sequence: want, hash: result.wanted };
    if (!hashing) return;
    const joined = joinOf();
    if (!joined) early.push(result);
    else if (!joined.push(result)) hashing = false;
    checked += result.report.checkedEvents;
    const head = scanner.members.get('head') as { sequence?: unknown } | undefined;
    const from = scanner.members.get('from') as { sequence?: unknown } | undefined;
    if (typeof head?.sequence === 'number' && typeof from?.sequence === 'number') opts.onProgress?.(checked, head.sequence - from.sequence);
  };

  const inFlight: { result: Promise<BundleBatchResult>; want: number | null }[] = [];
  for await (const chunk of chunksOf(file)) {
    for (const batch of scanner.push(chunk)) {
      const want = opts.want(scanner.members);
      // Every event's leaf goes into the tree (WHOLE_BUNDLE): a bundle's checkpoint is of its head.
      const result = pool.run<BundleBatchResult>({ ...batch, hashing, want, treeSize: WHOLE_BUNDLE });
      // Awaited in turn below; a worker's failure must not go unhandled meanwhile.
      result.catch(() => undefined);
      inFlight.push({ result, want });
      if (inFlight.length >= 2 * workers) {
        const next = inFlight.shift()!;
        take(await next.result, next.want);
      }
    }
  }
  scanner.end();
  while (inFlight.length > 0) {
    const next = inFlight.shift()!;
    take(await next.result, next.want);
  }
  return {
    scanner,
    join: joinOf(),
    tree: tree as TreeAccumulator | null,
    problem: problem as string | null,
    wanted: wanted as { sequence: number; hash: string } | null,
    workspaces,
  };
}

/** The facts of a bundle file (see BundleFacts), its events checked by the pool's workers. */
async function factsOfFile(
  file: string,
  pool: VerifierPool,
  workers: number,
  opts: BundleFileOptions & { follows?: number },
): Promise<BundleFacts> {
  // The hash at the head the bundle follows is picked out as the events go by, when that head is
  // known before them (given by --previous, or the bundle's own `previous` ahead of its events).
  const want = (members: Map<string, unknown>) =>
    opts.follows ?? ((members.get('previous') as { sequence?: unknown } | null)?.sequence as number | undefined) ?? null;
  const found = await scan(file, pool, workers, { ...opts, want, hashing: true }).catch((err: unknown) => {
    // Which file could not be read, for the message (a file system error names it as `path`).
    throw Object.assign(err instanceof Error ? err : new Error(String(err)), { file });
  });
  const members = membersOf(found.scanner);
  const problem = frameProblem(members) ?? (found.scanner.events === 'not_an_array' ? 'events: expected an array' : null) ?? found.problem;
  if (problem) return notABundle(problem);
  const frame = members as unknown as BundleFrame;
  const chain = found.join!.finish(frame.head);
  let wanted = found.wanted;
  // The head it follows was not known while the events went by (a bundle with its `previous`
  // after its events, as this service wrote them before): its hash is looked for in a second pass.
  const need = opts.follows ?? frame.previous?.sequence;
  if (chain.verified && need !== undefined && need > frame.from.sequence && need <= frame.head.sequence && wanted?.sequence !== need) {
    wanted = (await scan(file, pool, workers, { batchBytes: opts.batchBytes, want: () => need, hashing: false })).wanted;
  }
  return {
    problem: null,
    frame,
    chain,
    otherWorkspace: found.workspaces.find((w) => w.workspaceId !== frame.workspaceId) ?? null,
    hashAt: (sequence) => (sequence === frame.from.sequence ? frame.from.hash : wanted?.sequence === sequence ? wanted.hash : undefined),
    tree: found.tree,
  };
}

/**
 * Checks a bundle file as verifyBundle checks a bundle in memory (the same report), and with
 * `previous`, that it extends that earlier bundle file. Throws BundleSyntaxError when a file is not
 * the JSON text of an object, and the file system's error when one cannot be read.
 */
export async function verifyBundleFile(file: string, opts: BundleFileOptions = {}): Promise<BundleReport> {
  const workers = Math.max(1, opts.workers ?? availableParallelism());
  const pool = new VerifierPool(workers);
  try {
    const earlier = opts.previous ? await factsOfFile(opts.previous, pool, workers, { batchBytes: opts.batchBytes }) : undefined;
    const follows = earlier && !earlier.problem ? earlier.frame.head.sequence : undefined;
    const facts = await factsOfFile(file, pool, workers, { ...opts, follows });
    return judgeBundle(facts, earlier, { vkey: opts.vkey });
  } finally {
    await pool.close();
  }
}
