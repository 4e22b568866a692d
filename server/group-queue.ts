/**
 * Group commit in the process: requests that arrive while a batch is in the database make up the
 * next batch, which then goes out as one statement or one transaction. Under no load a request
 * goes out at once, alone, so batching adds no latency; under load a batch costs one round trip
 * and one COMMIT however many requests it answers, where one each cost as many (docs/performance.md:
 * claims). Two users: the batched writes (server/api/batch.ts) and the API-key
 * lookup every /api/v1 request makes (server/auth/api-keys.ts).
 *
 * Unlike DataLoader, which gathers what one tick of the event loop asks for, a batch here is what
 * arrived while the previous one ran: HTTP requests parsed over many ticks still meet in a batch,
 * and one batch at a time is in flight per queue.
 */

export interface GroupQueueOptions<E> {
  /** Answers a batch: settles every entry of it. */
  run(batch: E[]): Promise<void>;
  /** Settles an entry of a batch whose `run` threw: what fails the batch fails each of its requests. */
  fail(entry: E, error: unknown): void;
  /** The next batch and what waits for a later one; by default the first `max` waiting. */
  take?(waiting: readonly E[]): { batch: E[]; later: E[] };
  /** Entries a batch takes at most (with the default `take`). */
  max?: number;
  /** Called when the queue has run dry (a caller that keeps queues per key forgets this one). */
  idle?(): void;
}

export interface GroupQueue<E> {
  push(entry: E): void;
}

export function groupQueue<E>(opts: GroupQueueOptions<E>): GroupQueue<E> {
  const max = opts.max ?? 64;
  const take = opts.take ?? ((waiting: readonly E[]) => ({ batch: waiting.slice(0, max), later: waiting.slice(max) }));
  let waiting: E[] = [];
  let running = false;
  async function drain(): Promise<void> {
    running = true;
    try {
      while (waiting.length > 0) {
        const next = take(waiting);
        waiting = next.later;
        try {
          await opts.run(next.batch);
        } catch (error) {
          for (const entry of next.batch) opts.fail(entry, error);
        }
      }
    } finally {
      running = false;
      opts.idle?.();
    }
  }
  return {
    push(entry) {
      waiting.push(entry);
      if (!running) void drain();
    },
  };
}
