/**
 * The replayed state of a workspace, kept per process and brought up to date incrementally: ledger
 * events never change, so replaying only those appended since the last request gives the same
 * state as replaying them all. Requests for one workspace are serialised so no event is applied
 * twice; a failure drops the cached state instead of keeping a half-applied one.
 */
import type { Database } from '@/db';
import { readEvents, readHead } from '@/server/ledger/read';
import { emptyState, fold, type ProjectionState } from './state';

interface Entry {
  state: ProjectionState;
  sequence: number;
  events: number;
  aggregates: Set<string>;
  queue: Promise<unknown>;
}

export interface Replayed {
  state: ProjectionState;
  /** Events replayed into this state, in total. */
  events: number;
  /** Distinct aggregates those events belong to. */
  aggregates: number;
  head: { sequence: number; hash: string };
}

const caches = new WeakMap<Database, Map<string, Entry>>();
const PAGE = 5000;

/**
 * Brings the workspace's replayed state up to date and runs `use` on it, inside the workspace's
 * queue: the state cannot change while `use` reads it.
 */
export function withReplayed<T>(db: Database, workspaceId: string, use: (replayed: Replayed) => T): Promise<T> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let entry = cache.get(workspaceId);
  if (!entry) {
    entry = { state: emptyState(), sequence: 0, events: 0, aggregates: new Set(), queue: Promise.resolve() };
    cache.set(workspaceId, entry);
  }
  const current = entry;
  const run = current.queue.then(async (): Promise<T> => {
    const head = (await readHead(db, workspaceId)) ?? { sequence: 0, headHash: '' };
    try {
      while (current.sequence < head.sequence) {
        const page = await readEvents(db, workspaceId, {
          after: current.sequence,
          limit: Math.min(PAGE, head.sequence - current.sequence),
        });
        if (page.length === 0) break;
        fold(page, current.state);
        for (const e of page) current.aggregates.add(e.aggregateId);
        current.events += page.length;
        current.sequence = page[page.length - 1]!.sequence;
      }
    } catch (err) {
      cache.delete(workspaceId);
      throw err;
    }
    return use({
      state: current.state,
      events: current.events,
      aggregates: current.aggregates.size,
      head: { sequence: head.sequence, hash: head.headHash },
    });
  });
  current.queue = run.catch(() => undefined);
  return run;
}
