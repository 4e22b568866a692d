/**
 * Waiting for a decision's ruling without asking the database: the wait joins its workspace's
 * feed (server/ledger/feed.ts), the one reader that the event-stream leases share, which reads the
 * ledger only when a commit wakes it. The wait hears every event the feed reads and wakes only for
 * its own decision's; a wait that hears nothing costs a timer.
 */
import type { LedgerEvent } from '@/server/ledger/canonical';
import type { FeedHub, FeedLease, WorkspaceFeed } from '@/server/ledger/feed';

/** Why `next` returned. */
export type WaitSignal = 'moved' | 'timeout' | 'cancelled' | 'access_ended' | 'failed';

export class DecisionWatch implements FeedLease {
  /** Only while the wake-ups are unhealthy (PostgreSQL's LISTEN down) does the feed poll, this often. */
  readonly pollMs = 1000;
  private moved = false;
  private cancelled = false;
  private ended: 'access_ended' | 'failed' | null = null;
  private wake: (() => void) | null = null;
  private feed: WorkspaceFeed | null = null;

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
  }

  push(events: readonly LedgerEvent[]): void {
    for (const event of events) {
      if (event.aggregateId === this.decisionId) {
        this.moved = true;
        this.wake?.();
        return;
      }
    }
  }

  endAccess(): void {
    this.ended = 'access_ended';
    this.wake?.();
  }

  fail(): void {
    this.ended ??= 'failed';
    this.wake?.();
  }

  /**
   * Ends the wait: the client hung up or cancelled the call, its session ended, or the service is
   * stopping. An arrow, so it can be handed to each of them as it is (no AbortSignal per wait).
   */
  readonly cancel = (): void => {
    this.cancelled = true;
    this.wake?.();
  };

  /** Waits until the decision's ledger moves, `ms` pass, or the wait is cancelled. */
  next(ms: number): Promise<WaitSignal> {
    return new Promise((resolve) => {
      const settle = () => {
        clearTimeout(timer);
        this.wake = null;
        if (this.ended) resolve(this.ended);
        else if (this.cancelled) resolve('cancelled');
        else if (this.moved) {
          this.moved = false;
          resolve('moved');
        } else resolve('timeout');
      };
      const timer = setTimeout(settle, Math.max(0, ms));
      if (this.ended || this.moved || this.cancelled) return settle();
      this.wake = settle;
    });
  }
}
