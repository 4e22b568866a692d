/**
 * The shared readers behind open event-stream leases (server/api/event-stream.ts): one feed per
 * workspace with open leases in this process, which reads the ledger only when a commit wakes it
 * (server/ledger/wake.ts) and pushes what it read to every lease, and the hub that keeps those feeds
 * and counts the open leases of each key.
 *
 * It lives with the ledger, not the API: it knows nothing of HTTP or of the SSE format, only how to
 * follow a workspace's ledger for many readers at the cost of one.
 */
import { and, inArray, isNotNull } from 'drizzle-orm';
import type { Database } from '@/db';
import { apiKeys } from '@/db/schema';
import type { LedgerEvent } from './canonical';
import { readEvents, readHead } from './read';
import type { LedgerWakeups } from './wake';

/** Events a feed reads at a time. */
const BATCH = 100;

/** An open lease as its workspace's feed sees it. */
export interface FeedLease {
  /** The API key reading (null: a signed-in human). */
  keyId: string | null;
  pollMs: number;
  /** Events that committed, in sequence order, unfiltered. */
  push(events: readonly LedgerEvent[]): void;
  /** Its reader lost access (its key was revoked). */
  endAccess(): void;
  /** The feed could not read. */
  fail(error: unknown): void;
}

/**
 * The open leases of one workspace in this process share one reader: when the workspace's ledger
 * moves it reads what is new once (wake-ups that come while it reads make one more read, not one
 * each) and pushes it to every lease, so a thousand idle leases cost nothing and a commit costs
 * one read, not one per lease. A batch with `api_key.revoked` in it makes it check its leases'
 * keys (the only time it does). While the wake-ups are not healthy (PostgreSQL's LISTEN is down),
 * it polls at the shortest `poll_ms` of its leases.
 */
export class WorkspaceFeed {
  readonly leases = new Set<FeedLease>();
  /** Resolved once `position` is known: the head when the feed started, then what it pushed. */
  readonly ready: Promise<void>;
  failed = false;
  private position = 0;
  private started = false;
  private reading = false;
  private again = false;
  private closed = false;
  private poll: NodeJS.Timeout | null = null;
  private pollEvery = Infinity;
  private readonly unsubscribe: () => void;
  private readonly unwatch: () => void;

  constructor(
    private readonly db: Database,
    private readonly wakeups: LedgerWakeups,
    readonly workspaceId: string,
    onFailed: (feed: WorkspaceFeed) => void,
  ) {
    // Subscribed before the head is read: a commit after that read always wakes this feed.
    this.unsubscribe = wakeups.subscribe(workspaceId, () => this.wake());
    this.unwatch = wakeups.onHealthChange(() => this.schedulePoll());
    this.ready = readHead(db, workspaceId).then((head) => {
      this.position = head?.sequence ?? 0;
      this.started = true;
      if (this.again) this.wake();
    });
    this.ready.catch(() => {
      this.failed = true;
      onFailed(this);
    });
  }

  add(lease: FeedLease): void {
    this.leases.add(lease);
    if (!this.wakeups.healthy) this.schedulePoll(lease.pollMs < this.pollEvery);
  }

  remove(lease: FeedLease): void {
    this.leases.delete(lease);
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.unwatch();
    if (this.poll) clearTimeout(this.poll);
    this.poll = null;
  }

  wake(): void {
    if (this.closed) return;
    if (!this.started || this.reading) {
      this.again = true;
      return;
    }
    void this.read();
  }

  private async read(): Promise<void> {
    this.reading = true;
    try {
      do {
        this.again = false;
        for (;;) {
          const events = await readEvents(this.db, this.workspaceId, { after: this.position, limit: BATCH });
          if (events.length === 0 || this.closed) break;
          this.position = events[events.length - 1]!.sequence;
          for (const lease of this.leases) lease.push(events);
          if (events.some((e) => e.eventType === 'api_key.revoked')) await this.checkKeys();
          if (events.length < BATCH) break;
        }
      } while (this.again && !this.closed);
    } catch (err) {
      for (const lease of this.leases) lease.fail(err);
    } finally {
      this.reading = false;
    }
  }

  private async checkKeys(): Promise<void> {
    const keyIds = [...new Set([...this.leases].flatMap((l) => (l.keyId ? [l.keyId] : [])))];
    if (keyIds.length === 0) return;
    const rows = await this.db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(inArray(apiKeys.id, keyIds), isNotNull(apiKeys.revokedAt)));
    const gone = new Set(rows.map((r) => r.id));
    for (const lease of this.leases) if (lease.keyId && gone.has(lease.keyId)) lease.endAccess();
  }

  /** Polls while the wake-ups are unhealthy; stops when they are healthy again. */
  private schedulePoll(restart = false): void {
    if (restart && this.poll) {
      clearTimeout(this.poll);
      this.poll = null;
    }
    if (this.closed || this.wakeups.healthy || this.leases.size === 0) {
      if (this.poll) clearTimeout(this.poll);
      this.poll = null;
      this.pollEvery = Infinity;
      return;
    }
    if (this.poll) return;
    const every = Math.min(...[...this.leases].map((l) => l.pollMs));
    this.pollEvery = every;
    this.poll = setTimeout(() => {
      this.poll = null;
      this.wake();
      this.schedulePoll();
    }, every);
  }
}

/** The feeds of one runtime, one per workspace with open leases, and the open leases of each key. */
export class FeedHub {
  private readonly feeds = new Map<string, WorkspaceFeed>();
  /** Deadlines of each key's open leases (a lease may outlive its deadline by a read; it still counts). */
  private readonly keyLeases = new Map<string, Set<{ deadline: number }>>();

  constructor(
    private readonly db: Database,
    private readonly wakeups: LedgerWakeups,
  ) {}

  /**
   * A place for one more lease of `keyId` ending at `deadline`, or, when the key already holds
   * `max`, how long until its first one ends. Per instance: a lease is a socket on this process.
   */
  admit(keyId: string, deadline: number, max: number): { release(): void } | { retryAfterMs: number } {
    let open = this.keyLeases.get(keyId);
    if (open && open.size >= max) {
      let first = Infinity;
      for (const lease of open) first = Math.min(first, lease.deadline);
      return { retryAfterMs: first - Date.now() };
    }
    if (!open) this.keyLeases.set(keyId, (open = new Set()));
    const entry = { deadline };
    open.add(entry);
    const set = open;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        set.delete(entry);
        if (set.size === 0 && this.keyLeases.get(keyId) === set) this.keyLeases.delete(keyId);
      },
    };
  }

  join(workspaceId: string, lease: FeedLease): WorkspaceFeed {
    let feed = this.feeds.get(workspaceId);
    if (!feed || feed.failed) {
      feed = new WorkspaceFeed(this.db, this.wakeups, workspaceId, (failed) => this.forget(failed));
      this.feeds.set(workspaceId, feed);
    }
    feed.add(lease);
    return feed;
  }

  leave(feed: WorkspaceFeed, lease: FeedLease): void {
    feed.remove(lease);
    if (feed.leases.size > 0) return;
    feed.close();
    this.forget(feed);
  }

  private forget(feed: WorkspaceFeed): void {
    if (this.feeds.get(feed.workspaceId) === feed) this.feeds.delete(feed.workspaceId);
  }
}

const hubs = new WeakMap<LedgerWakeups, FeedHub>();
/** The hub of a runtime's wake-ups (one per runtime: a test may run several in one process). */
export function hubOf(runtime: { db: Database; wakeups: LedgerWakeups }): FeedHub {
  let hub = hubs.get(runtime.wakeups);
  if (!hub) {
    hub = new FeedHub(runtime.db, runtime.wakeups);
    hubs.set(runtime.wakeups, hub);
  }
  return hub;
}
