/**
 * Waiting for a decision's ruling without asking the database: the wait joins its workspace's
 * feed (server/ledger/feed.ts), the one reader that the event-stream leases share, which reads the
 * ledger only when a commit wakes it. The wait hears every event the feed reads and wakes only for
 * its own decision's; a wait that hears nothing costs a timer.
 *
 * It calls back rather than settling promises: a wait holds no promise, closure or async frame of
 * its own while it waits (ten thousand may wait at once: docs/performance.md).
 */
import type { LedgerEvent } from '@/server/ledger/canonical';
import type { FeedHub, FeedLease, WorkspaceFeed } from '@/server/ledger/feed';

/** Why a wait woke. */
export type WaitSignal = 'moved' | 'timeout' | 'cancelled' | 'access_ended' | 'failed';

export class DecisionWatch implements FeedLease {
  /** Only while the wake-ups are unhealthy (PostgreSQL's LISTEN is down) does the feed poll, this often. */
  readonly pollMs = 1000;
  private moved = false;
  private cancelled = false;
  private ended: 'access_ended' | 'failed' | null = null;
  private feed: WorkspaceFeed | null = null;
  /** What `next` was handed, until it is called. */
  private then: ((why: WaitSignal) => void) | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly hub: FeedHub,
    readonly keyId: string,
    private readonly workspaceId: string,
    private readonly decisionId: string,
  ) {}

  /** Joins the feed; settles once the feed knows its position (every later commit reaches this watch). */
  async start(): Promise<void> {
    this.feed = this.hub.join(this.workspaceId, this);
    await this.feed.ready;
  }

  stop(): void {
    if (this.feed) this.hub.leave(this.feed, this);
    this.feed = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.then = null;
  }

  push(events: readonly LedgerEvent[]): void {
    for (const event of events) {
      if (event.aggregateId === this.decisionId) {
        this.moved = true;
        this.signal();
        return;
      }
    }
  }

  endAccess(): void {
    this.ended = 'access_ended';
    this.signal();
  }

  fail(): void {
    this.ended ??= 'failed';
    this.signal();
  }

  /**
   * Ends the wait: the client hung up or cancelled the call, its session ended, or the service is
   * stopping. An arrow, so it can be handed to each of them as it is (no AbortSignal per wait).
   */
  readonly cancel = (): void => {
    this.cancelled = true;
    this.signal();
  };

  /** Calls `then` once: when the decision's ledger moves, `ms` pass, or the wait is cancelled. */
  next(ms: number, then: (why: WaitSignal) => void): void {
    this.then = then;
    if (this.ended || this.moved || this.cancelled) return this.signal();
    this.timer = setTimeout(this.elapsed, Math.max(0, ms));
  }

  private readonly elapsed = (): void => {
    this.timer = null;
    this.signal();
  };

  private signal(): void {
    const then = this.then;
    if (!then) return;
    this.then = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.ended) then(this.ended);
    else if (this.cancelled) then('cancelled');
    else if (this.moved) {
      this.moved = false;
      then('moved');
    } else then('timeout');
  }
}
