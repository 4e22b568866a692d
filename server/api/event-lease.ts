/**
 * One open SSE lease of the event stream (server/api/event-stream.ts opens it): the state of one
 * connection and the loop that sends it events, keepalives and at the end `lease_end`.
 *
 * The lease catches up by reading the ledger itself, then waits on its workspace's feed
 * (server/ledger/feed.ts), which pushes what commits; it reads again only when it fell behind.
 */
import { and, eq, isNotNull } from 'drizzle-orm';
import type { Database } from '@/db';
import { apiKeys } from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { encodeCursor } from '@/server/ledger/cursor';
import type { FeedHub, FeedLease } from '@/server/ledger/feed';
import { readEvents } from '@/server/ledger/read';
import type { Runtime } from '@/server/runtime';
import type { ChunkSink, PushedBody } from '@/server/http/exchange';
import type { Principal } from './trpc';

const BATCH = 100;
/** Events a lease holds for sending before it drops them and reads instead. */
const MAX_INBOX = 1000;

/** What the request asked of its lease, checked (server/api/event-stream.ts). */
export interface LeaseSettings {
  workspaceId: string;
  /** The sequence it resumes after (0: from the first event). */
  after: number;
  /** When it ends with lease_end (ms since the epoch). */
  deadline: number;
  /** Only events of these types (none or empty: all). */
  types: string[] | undefined;
  pollMs: number;
}

const encoder = new TextEncoder();

export class EventLease implements FeedLease, PushedBody {
  readonly keyId: string | null;
  readonly pollMs: number;
  /** Settles when it has sent its last frame and closed. */
  readonly done: Promise<void>;
  private finished!: () => void;
  /** The signed-in human reading (null: an API key): their removal from the workspace ends the lease. */
  private readonly userId: string | null;
  private readonly types: Set<string> | null;
  private after: number;
  private lastSent = Date.now();
  // What the workspace's feed pushed since the lease's last read began.
  private inbox: LedgerEvent[] = [];
  private needsRead = true;
  // Its reader lost access: the key was revoked, or the signed-in member was removed from the workspace.
  private accessEnded = false;
  private failure: { error: unknown } | null = null;
  private wake: (() => void) | null = null;
  /** The client went away (or the lease has closed the stream). */
  private closed = false;
  // The service is stopping: end with lease_end now, as at the deadline (endEventStreams).
  private ending = false;
  // The client is behind: the connection holds all it will buffer. Nothing more is written (or
  // kept) until it has taken that; then the lease reads on from its last event, as a lease that
  // fell behind the feed does. A slow reader costs a read when it catches up, not memory.
  private behind = false;
  private sink!: ChunkSink;

  constructor(
    private readonly runtime: Runtime,
    private readonly hub: FeedHub,
    /** Its place among its key's leases (FeedHub.admit), given back when it ends. */
    private readonly place: { release(): void },
    principal: Principal,
    private readonly settings: LeaseSettings,
  ) {
    this.keyId = principal.kind === 'api_key' ? principal.keyId : null;
    this.userId = principal.kind === 'human' ? principal.userId : null;
    this.pollMs = settings.pollMs;
    this.after = settings.after;
    this.types = settings.types && settings.types.length > 0 ? new Set(settings.types) : null;
    this.done = new Promise<void>((resolve) => (this.finished = resolve));
  }

  /** The response body: the lease runs from now, writing into `sink`, until it ends or is cancelled (the client left). */
  start(sink: ChunkSink): void {
    void this.run(sink);
  }

  /** The client went away: stop without another frame. */
  cancel(): void {
    this.closed = true;
    this.alarm();
  }

  push(events: readonly LedgerEvent[]): void {
    if (this.userId && events.some((e) => e.eventType === 'membership.removed' && e.payload.user_id === this.userId)) {
      this.accessEnded = true;
      this.alarm();
      return;
    }
    // Behind: what the feed pushes now is read after the client catches up.
    if (this.behind) return;
    if (this.wake && !this.needsRead && this.inbox.length === 0) {
      // Waiting with nothing pending: send them now, without waking the loop. (Whatever
      // happens here stays this lease's: the feed goes on to the others.)
      try {
        this.deliver(events);
      } catch (error) {
        this.fail(error);
      }
      return;
    }
    if (this.inbox.length + events.length > MAX_INBOX) {
      // Too far behind (a long catch-up): drop them, a read will cover them.
      this.inbox = [];
      this.needsRead = true;
    } else {
      for (const event of events) this.inbox.push(event);
    }
    this.alarm();
  }

  endAccess(): void {
    this.accessEnded = true;
    this.alarm();
  }

  fail(error: unknown): void {
    this.failure ??= { error };
    this.alarm();
  }

  /** Ends it now, with lease_end and the cursor to resume from. */
  end(): void {
    this.ending = true;
    this.alarm();
  }

  /** Wakes the loop if it waits. */
  private alarm(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private send(text: string | Uint8Array): void {
    if (this.closed || this.sink.write(typeof text === 'string' ? encoder.encode(text) : text) || this.behind) return;
    this.behind = true;
    this.inbox = [];
    this.sink.drained(() => {
      this.behind = false;
      this.needsRead = true;
      this.alarm();
    });
  }

  private deliver(events: readonly LedgerEvent[]): void {
    let sent = false;
    for (const event of events) {
      if (this.behind) break;
      if (event.sequence <= this.after || (this.types && !this.types.has(event.eventType))) continue;
      this.after = event.sequence;
      this.send(frameOf(this.runtime.secrets.cursor, event));
      sent = true;
    }
    if (sent) this.lastSent = Date.now();
  }

  /**
   * Catching up on its own: the feed only pushes what commits from now on. Anything pushed before
   * this read began is covered by it (and the reads after it).
   */
  private async catchUp(): Promise<void> {
    this.needsRead = false;
    this.inbox = [];
    const rows = await readEvents(this.runtime.db, this.settings.workspaceId, {
      after: this.after,
      limit: BATCH,
      types: this.settings.types,
    });
    this.deliver(rows);
    if (rows.length === BATCH) this.needsRead = true;
  }

  private deliverInbox(): void {
    const pushed = this.inbox;
    this.inbox = [];
    this.deliver(pushed);
  }

  private async run(sink: ChunkSink): Promise<void> {
    this.sink = sink;
    const { db, env, secrets } = this.runtime;
    const { workspaceId, deadline, pollMs } = this.settings;
    const keepaliveMs = env.SSE_KEEPALIVE_MS;
    const feed = this.hub.join(workspaceId, this);
    try {
      this.send(`retry: ${Math.min(pollMs, 1000)}\n\n`);
      await feed.ready;
      // A revocation that committed before this lease joined the feed is not pushed to it.
      if (this.keyId) this.accessEnded = await revoked(db, this.keyId);
      // Every lease reads at least once, however short (opening it may have taken longer).
      let replayed = false;
      while (!this.closed && !this.ending && !this.accessEnded && !this.failure && (Date.now() < deadline || !replayed)) {
        // Reading and delivering happen in methods of their own: a variable of this loop that
        // held the rows or the inbox would be kept, with every event in it, in this frame's
        // registers for as long as the lease then waits (V8 saves an async function's registers
        // at each await, whatever their scope).
        if (this.needsRead && !this.behind) {
          await this.catchUp();
          replayed = true;
          continue;
        }
        if (this.inbox.length > 0 && !this.behind) {
          this.deliverInbox();
          continue;
        }
        // Idle: no query until the feed pushes, the key is revoked, or the lease ends (or, behind,
        // until the client catches up; a keepalive is not needed then).
        const until = this.behind ? deadline : Math.min(deadline, this.lastSent + keepaliveMs);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(0, until - Date.now()));
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = null;
        const now = Date.now();
        if (!this.behind && this.inbox.length === 0 && !this.needsRead && now >= this.lastSent + keepaliveMs && now < deadline) {
          this.send(': keepalive\n\n');
          this.lastSent = now;
        }
      }
      const failed = this.failure as { error: unknown } | null;
      if (failed) throw failed.error;
      this.send(`event: lease_end\ndata: ${JSON.stringify({ nextCursor: encodeCursor(secrets.cursor, workspaceId, this.after) })}\n\n`);
    } catch {
      // The database failed mid-lease: end it; the client resumes from the last id it received.
    } finally {
      this.hub.leave(feed, this);
      this.place.release();
      if (!this.closed) {
        this.closed = true;
        sink.end();
      }
      this.finished();
    }
  }
}

async function revoked(db: Database, keyId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.id, keyId), isNotNull(apiKeys.revokedAt)));
  return Boolean(row);
}

/**
 * The frame of an event, encoded: the same bytes for every lease of its workspace (the feed hands
 * them all the same event objects), so built once. Nothing writes into a chunk once enqueued.
 */
const frames = new WeakMap<LedgerEvent, Uint8Array>();
function frameOf(secret: string, event: LedgerEvent): Uint8Array {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = encoder.encode(
      `id: ${encodeCursor(secret, event.workspaceId, event.sequence)}\nevent: ${event.eventType}\ndata: ${JSON.stringify(event)}\n\n`,
    );
    frames.set(event, frame);
  }
  return frame;
}
