/**
 * The replayed state of a workspace, kept per process and brought up to date incrementally: ledger
 * events never change, so replaying only those appended since the last request gives the same
 * state as replaying them all. Requests for one workspace are serialised so no event is applied
 * twice. A failure resets the entry, so requests queued behind it replay from the start instead of
 * reusing a half-applied state. At most MAX_WORKSPACES states are kept (least recently used go).
 */
import type { Database } from '@/db';
import { readEvents, readHead } from '@/server/ledger/read';
import { emptyState, type ProjectionState } from '@/server/domain/projection';
import { fold } from './state';

interface Entry {
  state: ProjectionState;
  sequence: number;
  events: number;
  /** Events replayed per aggregate id. */
  eventsByAggregate: Map<string, number>;
  queue: Promise<unknown>;
}

export interface Replayed {
  state: ProjectionState;
  /** Events replayed into this state, in total. */
  events: number;
  /** Events replayed per aggregate id. */
  eventsByAggregate: ReadonlyMap<string, number>;
  head: { sequence: number; hash: string };
}

const caches = new WeakMap<Database, Map<string, Entry>>();
const PAGE = 5000;
export const MAX_WORKSPACES = 64;

const fresh = (): Omit<Entry, 'queue'> => ({ state: emptyState(), sequence: 0, events: 0, eventsByAggregate: new Map() });

/** The workspaces whose replayed state is kept for `db`, least recently used first. */
export function cachedWorkspaces(db: Database): string[] {
  return [...(caches.get(db)?.keys() ?? [])];
}

/** Forgets every replayed state of `db` (tests use it to make the next read replay from the ledger). */
export function resetReplayCache(db: Database): void {
  caches.delete(db);
}

/**
 * Brings the workspace's replayed state up to date and runs `use` on it, inside the workspace's
 * queue: the state cannot change while `use` reads it.
 */
export function withReplayed<T>(db: Database, workspaceId: string, use: (replayed: Replayed) => T): Promise<T> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let entry = cache.get(workspaceId);
  if (entry) {
    // Most recently used last: Map keeps insertion order.
    cache.delete(workspaceId);
    cache.set(workspaceId, entry);
  } else {
    entry = { ...fresh(), queue: Promise.resolve() };
    cache.set(workspaceId, entry);
    while (cache.size > MAX_WORKSPACES) cache.delete(cache.keys().next().value!);
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
        for (const e of page) current.eventsByAggregate.set(e.aggregateId, (current.eventsByAggregate.get(e.aggregateId) ?? 0) + 1);
        current.events += page.length;
        current.sequence = page[page.length - 1]!.sequence;
      }
    } catch (err) {
      Object.assign(current, fresh());
      throw err;
    }
    return use({
      state: current.state,
      events: current.events,
      eventsByAggregate: current.eventsByAggregate,
      head: { sequence: head.sequence, hash: head.headHash },
    });
  });
  current.queue = run.catch(() => undefined);
  return run;
}
