/**
 * Verifying a long chain on every core (npm run ledger:verify). The events stream in sequence
 * order in batches of a few hundred; a pool of worker threads (verify-worker.ts) parses each
 * batch and runs ChainVerifier over it, which computes every canonical form and digest and checks
 * the links inside the batch; this thread joins the batches in order (ChainJoin), checking the one
 * link between each batch and the one before. The report, first break included, is the one a
 * single ChainVerifier gives over the whole chain (the tests hold the two together).
 *
 * On PostgreSQL the rows come from `COPY … TO STDOUT` in ranges of sequences, as raw bytes: this
 * thread only cuts them at line ends and hands the buffers over (transferred, not copied); the
 * workers decode them. PGlite has no COPY to a stream, so there the rows come in pages of text
 * columns. At most two batches per worker are in flight and a range is read only as they are
 * taken, so memory stays flat however long the chain.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { buildSync } from 'esbuild';
import type { DatabaseHandle } from '@/db';
import type { VerifyReport } from './chain';
import { EVENT_COPY_SELECT } from './event-rows';
import { readEventRows, readHead } from './read';
import { TreeAccumulator } from './merkle';
import { judgeAgainstCheckpoint, readSignedCheckpoint } from './signed';
import { beyondHead, type VerifyOptions } from './verify';
import { BATCH_BYTES, ChainJoin, type Batch, type BatchResult } from './verify-batch';

/**
 * verify-worker.ts and what it imports (the chain verifier, the canonical forms: no database
 * code), bundled into one CommonJS script by esbuild when the pool starts (tens of ms). A worker
 * that loaded the TypeScript sources itself would need tsx's loader registered in it: measured,
 * that cost 30 MB of memory per worker before any event, and loading the modules through it 40 more.
 */
let bundled: string | undefined;
function workerSource(): string {
  bundled ??= buildSync({
    entryPoints: [fileURLToPath(new URL('./verify-worker.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'silent',
  }).outputFiles[0]!.text;
  return bundled;
}

/**
 * A worker's young generation, in MiB (V8 sizes it from the machine otherwise, up to 48). A
 * worker keeps nothing from one batch to the next, so a small one costs no speed (measured: the
 * same events/s at 8 as at the default) and takes ~20 MiB less per worker.
 */
const WORKER_YOUNG_MB = 8;

/**
 * Worker threads running verify-worker.ts, each given batches in turn (a worker answers its own in
 * order): for a workspace's chain here, for a bundle file in bundle-file.ts.
 */
export class VerifierPool {
  private readonly workers: Worker[];
  private next = 0;
  private readonly waiting = new Map<Worker, { resolve: (result: BatchResult) => void; reject: (err: Error) => void }[]>();
  private failure: Error | null = null;

  constructor(size: number) {
    const source = workerSource();
    this.workers = Array.from({ length: size }, () => {
      const worker = new Worker(source, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB } });
      const waiting: { resolve: (result: BatchResult) => void; reject: (err: Error) => void }[] = [];
      this.waiting.set(worker, waiting);
      worker.on('message', (result: BatchResult) => waiting.shift()?.resolve(result));
      worker.on('error', (err) => {
        this.failure = err;
        for (const w of waiting.splice(0)) w.reject(err);
      });
      return worker;
    });
  }

  /** Sends `batch` to the next worker (an ArrayBuffer is transferred); its result when done. */
  run<R extends BatchResult = BatchResult>(batch: Batch): Promise<R> {
    if (this.failure) return Promise.reject(this.failure);
    const worker = this.workers[this.next++ % this.workers.length]!;
    return new Promise<R>((resolve, reject) => {
      this.waiting.get(worker)!.push({ resolve: resolve as (result: BatchResult) => void, reject });
      worker.postMessage(batch, 'copy' in batch ? [batch.copy] : 'json' in batch ? [batch.json] : []);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Where the events come from: the database, and COPY on PostgreSQL. */
type EventSource = Pick<DatabaseHandle, 'db' | 'copyOut'>;

export interface ParallelVerifyOptions extends VerifyOptions {
  /** Worker threads (default: one per core). */
  workers?: number;
  /** Sequences per COPY statement on PostgreSQL (100,000 by default). */
  rangeEvents?: number;
  /** Bytes of COPY text per batch (BATCH_BYTES by default; on PGlite, `pageSize` rows). */
  batchBytes?: number;
}

/**
 * Batches of a workspace's events up to `end`, in order, until `stop()` says so: checked between
 * pages and between COPY ranges (a COPY under way is read to its end, see DatabaseHandle.copyOut).
 */
async function* batchesOf(
  handle: EventSource,
  workspaceId: string,
  end: number,
  stop: () => boolean,
  opts: ParallelVerifyOptions,
  treeSize: number,
): AsyncGenerator<Batch> {
  if (!handle.copyOut) {
    const pageSize = opts.pageSize ?? 500;
    for (let after = 0; after < end && !stop();) {
      const rows = await readEventRows(handle.db, workspaceId, { after, limit: Math.min(pageSize, end - after) });
      if (rows.length === 0) return;
      yield { rows, treeSize };
      after = Number(rows[rows.length - 1]!.sequence);
    }
    return;
  }
  const range = opts.rangeEvents ?? 100_000;
  const batchBytes = opts.batchBytes ?? BATCH_BYTES;
  if (!/^[0-9a-f-]{36}$/i.test(workspaceId)) throw new Error('workspace id must be a UUID');
  for (let after = 0; after < end && !stop(); after += range) {
    // COPY takes no parameters: the id was checked above and the bounds are integers.
    const stream = await handle.copyOut(
      `copy (select ${EVENT_COPY_SELECT.join(', ')} from ledger_events where workspace_id = '${workspaceId}'` +
        ` and sequence > ${after} and sequence <= ${Math.min(after + range, end)} order by sequence) to stdout`,
    );
    // Each chunk is copied into the batch at once: a chunk is a view on the socket's read buffer,
    // and a batch of views would keep every buffer they came from alive.
    let batch = new Uint8Array(batchBytes);
    let used = 0;
    for await (const chunk of stream as AsyncIterable<Uint8Array>) {
      if (used + chunk.length > batch.length) {
        // Whole lines only: the rest starts the next batch (a newline byte is never inside a UTF-8 character).
        const cut = batch.lastIndexOf(10, used - 1) + 1;
        const next = new Uint8Array(Math.max(batchBytes, used - cut + chunk.length));
        next.set(batch.subarray(cut, used));
        if (cut > 0) yield { copy: batch.buffer as ArrayBuffer, length: cut, treeSize };
        batch = next;
        used -= cut;
      }
      batch.set(chunk, used);
      used += chunk.length;
    }
    if (used > 0) yield { copy: batch.buffer as ArrayBuffer, length: used, treeSize };
  }
}

/**
 * Verifies a workspace's whole chain from the database as verifyWorkspace does (the same report,
 * checked against the newest signed checkpoint too), the digests and the Merkle tree's nodes
 * computed by worker threads.
 */
export async function verifyWorkspaceParallel(
  handle: EventSource,
  workspaceId: string,
  opts: ParallelVerifyOptions = {},
): Promise<VerifyReport> {
  const signed = await readSignedCheckpoint(handle.db, workspaceId);
  // Read the head next: events appended while we read lie beyond it and are not judged.
  const head = await readHead(handle.db, workspaceId);
  const end = head?.sequence ?? 0;
  const workers = Math.max(1, opts.workers ?? availableParallelism());
  const pool = new VerifierPool(workers);
  const tree = new TreeAccumulator();
  const join = new ChainJoin(undefined, tree);
  try {
    const inFlight: Promise<BatchResult>[] = [];
    let intact = true;
    const take = async () => {
      const result = await inFlight.shift()!;
      if (!intact || !(intact = join.push(result))) return;
      if (result.report.lastVerified.sequence > 0) opts.onProgress?.(result.report.lastVerified.sequence, end);
    };
    // After a break the batches still coming (the rest of a COPY) are read but not judged.
    for await (const batch of batchesOf(handle, workspaceId, end, () => !intact, opts, signed?.treeSize ?? 0)) {
      if (!intact) continue;
      const result = pool.run(batch);
      // Awaited in turn by take(); a worker's failure must not go unhandled meanwhile.
      result.catch(() => undefined);
      inFlight.push(result);
      if (inFlight.length >= 2 * workers) await take();
    }
    while (inFlight.length > 0) await take();
  } finally {
    await pool.close();
  }
  // As verifyWorkspace: what lies beyond the head is looked for only when the chain held to it.
  const report = await beyondHead(handle.db, workspaceId, join.finish(head ?? undefined), end);
  return judgeAgainstCheckpoint(report, signed, signed && tree.size === signed.treeSize ? tree.root() : null);
}
