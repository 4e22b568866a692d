/**
 * Batched writes: concurrent requests of one operation to one workspace run together, in one
 * transaction, with one statement per step for all of them rather than one per request. POST
 * /tasks/claim is one: 32 agents asking for work at once are answered by one pick of the queue
 * (`limit 32 … skip locked`), one update, one insert of runs and one append, where one claim at a
 * time held the queue for a round trip each (docs/performance.md: claims).
 *
 * A batch is what has queued for the operation and workspace while the previous batch ran: the
 * first request runs at once, alone; those that arrive meanwhile wait for its COMMIT and then run
 * together (at most MAX_BATCH). One batch per operation and workspace runs at a time in a process:
 * each takes the workspace's ledger lock, so a second one would only wait for it.
 *
 * A request is answered as runMutation (mutation.ts) answers a write: its body checked against the
 * operation's output schema before COMMIT; with an Idempotency-Key, the key claimed in the batch's
 * transaction and the response stored before COMMIT, or, when a committed request holds the key,
 * that request's response replayed (200; 422 for another body). What fails one request alone
 * (`run` answers an AppError for it) fails only it, and leaves no idempotency record. What fails
 * the transaction (the database, COMMIT) fails every request of the batch, and nothing was written.
 * A batched operation's answers carry nothing the ledger assigns at COMMIT (no event sequence or
 * hash: they are not filled in here, as mutation.ts fills a single write's).
 */
import type { Database, Tx } from '@/db';
import type { Actor } from '@/server/domain/actor';
import { claimIdempotencyKeys, storeBatchResponsesAtCommit, storedResponse } from '@/server/domain/idempotency';
import { AppError } from '@/server/errors';
import type { ApiContext } from './context';
import type { Runtime } from '@/server/runtime';
import { markChecked, requestFingerprint, type OutputCheck } from './mutation';
import { groupQueue, type GroupQueue } from '@/server/group-queue';

/** Requests one transaction answers at most. */
const MAX_BATCH = 64;

/** One request of a batch, as the operation sees it. */
interface BatchItem<I> {
  actor: Actor;
  input: I;
}

export interface BatchOperation<I> {
  /** Names the operation's batches (with the workspace). */
  name: string;
  /**
   * Runs the batch's requests in `tx`, all of one workspace: one answer per item, in order (the
   * body before the output check), or an AppError that fails that request alone. A throw fails the
   * whole batch.
   */
  run(tx: Tx, items: readonly BatchItem<I>[]): Promise<unknown[]>;
}

interface Entry {
  actor: Actor;
  input: unknown;
  output: OutputCheck<unknown>;
  status: number;
  /** The Idempotency-Key and the request's fingerprint, when it carries a key. */
  idempotency?: { key: string; fingerprint: string };
  settle(outcome: Outcome): void;
}

type Outcome =
  | { kind: 'answered'; body: unknown; text: string; status: number }
  | { kind: 'replayed'; body: unknown }
  | { kind: 'failed'; error: unknown };

/** Per database (tests run several servers in a process): the queues by operation and workspace. */
const queuesOf = new WeakMap<Database, Map<string, GroupQueue<Entry>>>();

/**
 * Runs one request of `op` in a batch and answers its body, as runMutation answers a write (the
 * status on ctx.res; on replay 200 and the stored body through `replay`).
 */
export async function runBatchedMutation<I, T>(
  ctx: ApiContext,
  actor: Actor,
  opts: { status: number; output: OutputCheck<T>; replay: (stored: T) => T },
  op: BatchOperation<I>,
  input: I,
): Promise<T> {
  const { db } = ctx.runtime;
  const key = actor.trace.idempotencyKey;
  const outcome = await new Promise<Outcome>((settle) => {
    const entry: Entry = {
      actor,
      input,
      output: opts.output,
      status: opts.status,
      idempotency: key ? { key, fingerprint: requestFingerprint(ctx) } : undefined,
      settle,
    };
    let queues = queuesOf.get(db);
    if (!queues) queuesOf.set(db, (queues = new Map()));
    const name = `${op.name}:${actor.workspaceId}`;
    let queue = queues.get(name);
    if (!queue)
      queues.set(
        name,
        (queue = groupQueue<Entry>({
          run: (batch) => runBatch(ctx.runtime, op, actor.workspaceId, batch),
          fail: (e, error) => e.settle({ kind: 'failed', error }),
          take: takeBatch,
          // A workspace that stops claiming leaves nothing behind.
          idle: () => queues.delete(name),
        })),
      );
    queue.push(entry);
  });
  if (outcome.kind === 'failed') throw outcome.error;
  if (outcome.kind === 'replayed') {
    ctx.res.status = 200;
    return opts.replay(outcome.body as T);
  }
  ctx.res.serialised = { body: outcome.body, text: outcome.text };
  ctx.res.status = outcome.status;
  return outcome.body as T;
}

/** The next batch: the first MAX_BATCH waiting, each Idempotency-Key once (a repeat waits for the next batch). */
function takeBatch(waiting: readonly Entry[]): { batch: Entry[]; later: Entry[] } {
  const batch: Entry[] = [];
  const keys = new Set<string>();
  const later: Entry[] = [];
  for (const entry of waiting) {
    const key = entry.idempotency?.key;
    if (batch.length >= MAX_BATCH || (key !== undefined && keys.has(key))) later.push(entry);
    else {
      batch.push(entry);
      if (key !== undefined) keys.add(key);
    }
  }
  return { batch, later };
}

async function runBatch<I>(runtime: Runtime, op: BatchOperation<I>, workspaceId: string, batch: Entry[]): Promise<void> {
  const { db, env } = runtime;
  const keyed = batch.filter((e) => e.idempotency).map((e) => e.idempotency!);
  let taken = new Set<string>();
  let outcomes: Map<Entry, Outcome>;
  try {
    outcomes = await db.transaction(async (tx) => {
      // BEGIN and the keys go out together; the operation's statements follow once the keys are known.
      if (keyed.length > 0) taken = await claimIdempotencyKeys(tx, workspaceId, keyed, env.IDEMPOTENCY_TTL_HOURS);
      const live = batch.filter((e) => !e.idempotency || !taken.has(e.idempotency.key));
      const answers =
        live.length > 0
          ? await op.run(
              tx,
              live.map((e) => ({ actor: e.actor, input: e.input as I })),
            )
          : [];
      const done = new Map<Entry, Outcome>();
      const responses: { key: string; status: number; body: string }[] = [];
      const released: string[] = [];
      live.forEach((entry, i) => {
        const answer = answers[i];
        if (answer instanceof AppError) {
          done.set(entry, { kind: 'failed', error: answer });
          if (entry.idempotency) released.push(entry.idempotency.key);
          return;
        }
        const body = entry.output.parse(answer);
        markChecked(body);
        const text = JSON.stringify(body);
        done.set(entry, { kind: 'answered', body, text, status: entry.status });
        if (entry.idempotency) responses.push({ key: entry.idempotency.key, status: entry.status, body: text });
      });
      storeBatchResponsesAtCommit(tx, workspaceId, responses, released);
      return done;
    });
  } catch (error) {
    for (const entry of batch) entry.settle({ kind: 'failed', error });
    return;
  }
  for (const entry of batch) {
    const outcome = outcomes.get(entry);
    if (outcome) entry.settle(outcome);
    else void replay(db, workspaceId, entry);
  }
}

/** A request whose key a committed request holds: that request's response (or 422, 409 as storedResponse says). */
async function replay(db: Database, workspaceId: string, entry: Entry): Promise<void> {
  try {
    const previous = await storedResponse(db, workspaceId, entry.idempotency!.key, entry.idempotency!.fingerprint);
    entry.settle({ kind: 'replayed', body: previous.body });
  } catch (error) {
    entry.settle({ kind: 'failed', error });
  }
}
