/**
 * GET /api/v1/events/stream?format=sse: a bounded Server-Sent Events lease over the workspace's
 * ledger. It replays from the position given (Last-Event-ID header, else `last_event_id`, else
 * `cursor`: a reconnecting EventSource sends the header with the original URL, so the header wins),
 * sends each event as `id: <cursor>` / `event: <eventType>` / `data: <the ledger event>`, waits for
 * the ledger to move, sends `: keepalive` comments, and ends with `event: lease_end` carrying the
 * next cursor. The JSON form of the same path is the tRPC procedure events.list; a plainly valid
 * page of it is served straight from ledger text by server/api/event-page.ts.
 *
 * Waiting costs no query: the open leases of a workspace share one feed (WorkspaceFeed below)
 * that reads only when a commit wakes it (server/ledger/wake.ts) and pushes what it read to each
 * lease; it polls every `poll_ms` only while the wake-ups are not healthy (PostgreSQL's LISTEN
 * connection down). A revoked key ends its leases when the feed reads the `api_key.revoked` event
 * (the revocation's own commit wakes it); keepalives are timers.
 */
import { z } from 'zod';
import { and, eq, inArray, isNotNull } from 'drizzle-orm';
import type { Database } from '@/db';
import { apiKeys } from '@/db/schema';
import { AppError } from '@/server/errors';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { decodeCursor, encodeCursor } from '@/server/ledger/cursor';
import { readEvents, readHead } from '@/server/ledger/read';
import type { LedgerWakeups } from '@/server/ledger/wake';
import type { Runtime } from '@/server/runtime';
import { hasSessionCookie, readSessionUser } from '@/server/auth/session';
import { requireKey, type PresentedKey } from './api-key-auth';
import { EVENT_LIST_PARAMS } from './event-page';
import { queryInput } from './operations';
import type { Answer, ApiRequest } from '@/server/http/exchange';
import { eventPageInput } from './routers/events';
import { countLeasesWith, countRefusal } from '@/server/metrics';

/** The query of an SSE lease: the JSON form's (events.list), with the lease's own settings defaulted. */
const sseQuery = eventPageInput.extend({
  format: z.literal('sse'),
  lease_ms: z.coerce.number().int().min(1).max(300_000).default(30_000),
  poll_ms: z.coerce.number().int().min(1).max(10_000).default(1000),
});

const BATCH = 100;
/** Events a lease holds for sending before it drops them and reads instead. */
const MAX_INBOX = 1000;

/** Validates the request and opens the lease; errors before the first byte are ordinary API errors. */
export async function serveEventStream(request: ApiRequest, runtime: Runtime, presented: PresentedKey | null): Promise<Answer> {
  const reader = await readerOf(request, runtime, presented);

  const raw = queryInput(request.url, EVENT_LIST_PARAMS);
  const parsed = sseQuery.safeParse(raw);
  if (!parsed.success) {
    const unknown = parsed.error.issues.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : []));
    if (unknown.length > 0) {
      throw new AppError('unknown_field', `Unknown query parameters: ${unknown.join(', ')}.`, { fields: unknown.map((k) => `query.${k}`) });
    }
    const issues = parsed.error.issues.map((i) => ({ path: `query.${i.path.join('.')}`, message: i.message }));
    throw new AppError('validation_failed', 'Invalid query parameters.', { issues });
  }
  const q = parsed.data;
  const secret = runtime.secrets.cursor;
  const workspaceId = workspaceOf(reader, q.workspace_id?.toLowerCase());
  // Where to start: the Last-Event-ID header, else last_event_id, else cursor (a reconnecting
  // EventSource resends the original URL with the header, so the header wins). Every one given is
  // checked, not only the one used: a forged or foreign cursor is refused wherever it stands. An
  // empty one counts as not given.
  const given = [
    ['Last-Event-ID', request.headers.get('last-event-id')],
    ['last_event_id', q.last_event_id],
    ['cursor', q.cursor],
  ] as const;
  let first: number | undefined;
  for (const [name, value] of given) {
    if (value === null || value === undefined || value === '') continue;
    const position = decodeCursor(secret, workspaceId, value);
    if (!position)
      throw new AppError('invalid_cursor', `This ${name} was not issued by this service for your workspace.`, {
        fields: [name === 'Last-Event-ID' ? 'header.last-event-id' : `query.${name}`],
      });
    first ??= position.sequence;
  }
  let after = first ?? 0;

  // Admitted last, so a request refused for its input does not count; released when the lease ends.
  const hub = hubOf(runtime);
  const deadline = Date.now() + q.lease_ms;
  const place = hub.admit(reader.kind === 'key' ? reader.keyId : `user:${reader.userId}`, deadline, runtime.env.SSE_LEASES_PER_KEY);
  if ('retryAfterMs' in place) {
    countRefusal('event_stream_leases');
    const retryAfter = Math.max(1, Math.ceil(place.retryAfterMs / 1000));
    throw new AppError(
      'rate_limited',
      `${reader.kind === 'key' ? 'This key already holds' : 'You already hold'} ${runtime.env.SSE_LEASES_PER_KEY} open ` +
        'event-stream leases on this instance; wait for one to end (Retry-After) or close one.',
      { limit: runtime.env.SSE_LEASES_PER_KEY, scope: 'event_stream_leases' },
      { retryAfter },
    );
  }

  const encoder = new TextEncoder();
  const keepaliveMs = runtime.env.SSE_KEEPALIVE_MS;
  const types = q.type && q.type.length > 0 ? new Set(q.type) : null;
  let stop: (() => void) | null = null;
  let closed = false;
  // The service is stopping: end with lease_end now, as at the deadline (endEventStreams).
  let ending = false;

  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string | Uint8Array) => {
        if (!closed) controller.enqueue(typeof text === 'string' ? encoder.encode(text) : text);
      };
      let lastSent = Date.now();
      // What the workspace's feed pushed since the lease's last read began (see FeedLease).
      let inbox: LedgerEvent[] = [];
      let needsRead = true;
      let keyRevoked = false;
      let failure: { error: unknown } | null = null;
      let wake: (() => void) | null = null;
      const alarm = () => {
        const w = wake;
        wake = null;
        w?.();
      };
      const userId = reader.kind === 'human' ? reader.userId : null;
      const lease: FeedLease = {
        keyId: reader.kind === 'key' ? reader.keyId : null,
        pollMs: q.poll_ms,
        push(events) {
          if (userId && events.some((e) => e.eventType === 'membership.removed' && e.payload.user_id === userId)) {
            keyRevoked = true;
            alarm();
            return;
          }
          if (wake && !needsRead && inbox.length === 0) {
            // Waiting with nothing pending: send them now, without waking the loop. (Whatever
            // happens here stays this lease's: the feed goes on to the others.)
            try {
              deliver(events);
            } catch (error) {
              lease.fail(error);
            }
            return;
          }
          if (inbox.length + events.length > MAX_INBOX) {
            // Too far behind (a long catch-up): drop them, a read will cover them.
            inbox = [];
            needsRead = true;
          } else {
            for (const event of events) inbox.push(event);
          }
          alarm();
        },
        revoke() {
          keyRevoked = true;
          alarm();
        },
        fail(error) {
          failure ??= { error };
          alarm();
        },
      };
      const deliver = (events: readonly LedgerEvent[]) => {
        let sent = false;
        for (const event of events) {
          if (event.sequence <= after || (types && !types.has(event.eventType))) continue;
          after = event.sequence;
          send(frameOf(secret, event));
          sent = true;
        }
        if (sent) lastSent = Date.now();
      };
      stop = () => {
        closed = true;
        alarm();
      };
      request.signal?.addEventListener('abort', () => stop?.());
      let finished!: () => void;
      const open: OpenLease = {
        end: () => {
          ending = true;
          alarm();
        },
        done: new Promise<void>((resolve) => (finished = resolve)),
      };
      openLeases.add(open);
      const feed = hub.join(workspaceId, lease);
      try {
        send(`retry: ${Math.min(q.poll_ms, 1000)}\n\n`);
        await feed.ready;
        // A revocation that committed before this lease joined the feed is not pushed to it.
        if (reader.kind === 'key') keyRevoked = await revoked(runtime, reader.keyId);
        // Every lease reads at least once, however short (opening it may have taken longer).
        let replayed = false;
        while (!closed && !ending && !keyRevoked && !failure && (Date.now() < deadline || !replayed)) {
          if (needsRead) {
            // Catching up on its own: the feed only pushes what commits from now on. Anything
            // pushed before this read began is covered by it (and the reads after it).
            needsRead = false;
            inbox = [];
            const rows = await readEvents(runtime.db, workspaceId, { after, limit: BATCH, types: q.type });
            deliver(rows);
            replayed = true;
            if (rows.length === BATCH) needsRead = true;
            continue;
          }
          if (inbox.length > 0) {
            const pushed = inbox;
            inbox = [];
            deliver(pushed);
            continue;
          }
          // Idle: no query until the feed pushes, the key is revoked, or the lease ends.
          const until = Math.min(deadline, lastSent + keepaliveMs);
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.max(0, until - Date.now()));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = null;
          const now = Date.now();
          if (inbox.length === 0 && !needsRead && now >= lastSent + keepaliveMs && now < deadline) {
            send(': keepalive\n\n');
            lastSent = now;
          }
        }
        const failed = failure as { error: unknown } | null;
        if (failed) throw failed.error;
        send(`event: lease_end\ndata: ${JSON.stringify({ nextCursor: encodeCursor(secret, workspaceId, after) })}\n\n`);
      } catch {
        // The database failed mid-lease: end it; the client resumes from the last id it received.
      } finally {
        hub.leave(feed, lease);
        place.release();
        if (!closed) {
          closed = true;
          controller.close();
        }
        openLeases.delete(open);
        finished();
      }
    },
    cancel() {
      stop?.();
    },
  });

  return {
    status: 200,
    headers: {
      ...(presented?.headers ?? {}),
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    },
    stream,
  };
}

/** Who reads: an API key (its workspace), or a signed-in human (one of theirs, chosen by the query). */
type Reader = { kind: 'key'; keyId: string; workspaceId: string } | { kind: 'human'; userId: string; memberOf: string[] };

/** The reader of a request: its API key when one is sent, else its session; 401 without either. */
async function readerOf(request: ApiRequest, runtime: Runtime, presented: PresentedKey | null): Promise<Reader> {
  const { headers } = request;
  if (presented || headers.get('authorization') !== null) {
    const key = requireKey(presented);
    return { kind: 'key', keyId: key.keyId, workspaceId: key.workspaceId };
  }
  const { db, secrets, env } = runtime;
  if (hasSessionCookie(headers, env.APP_URL)) {
    const user = await readSessionUser(db, headers, secrets.auth, env.APP_URL);
    if (!user) throw new AppError('unauthorized', 'The session has expired. Sign in again.');
    return { kind: 'human', userId: user.userId, memberOf: user.memberships.map((m) => m.workspaceId) };
  }
  throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>, or sign in.');
}

/** The workspace the lease reads: the key's (workspace_id, if sent, must name it), or the human's choice. */
function workspaceOf(reader: Reader, named: string | undefined): string {
  if (reader.kind === 'key') {
    if (named !== undefined && named !== reader.workspaceId) throw new AppError('forbidden', 'This API key belongs to another workspace.');
    return reader.workspaceId;
  }
  const workspaceId = named ?? reader.memberOf[0];
  if (!workspaceId || !reader.memberOf.includes(workspaceId)) throw new AppError('forbidden', 'You are not a member of that workspace.');
  return workspaceId;
}

/** An open lease as the process sees it when stopping. */
interface OpenLease {
  /** Ends it now, with lease_end and the cursor to resume from. */
  end(): void;
  /** Settles when it has sent its last frame and closed. */
  done: Promise<void>;
}
const openLeases = new Set<OpenLease>();
countLeasesWith(() => openLeases.size);

/**
 * Ends every open lease of this process with lease_end (the service is stopping): each client gets
 * the cursor to resume from, from this instance's successor or another one. Settles when all have
 * sent it. A lease opened after this call is not ended by it: the caller stops taking requests first.
 */
export async function endEventStreams(): Promise<number> {
  const leases = [...openLeases];
  for (const lease of leases) lease.end();
  await Promise.all(leases.map((l) => l.done));
  return leases.length;
}

async function revoked(runtime: Runtime, keyId: string): Promise<boolean> {
  const [row] = await runtime.db
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
const frameEncoder = new TextEncoder();
function frameOf(secret: string, event: LedgerEvent): Uint8Array {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = frameEncoder.encode(
      `id: ${encodeCursor(secret, event.workspaceId, event.sequence)}\nevent: ${event.eventType}\ndata: ${JSON.stringify(event)}\n\n`,
    );
    frames.set(event, frame);
  }
  return frame;
}

/** An open lease as its workspace's feed sees it. */
interface FeedLease {
  /** The API key reading (null: a signed-in human). */
  keyId: string | null;
  pollMs: number;
  /** Events that committed, in sequence order, unfiltered. */
  push(events: readonly LedgerEvent[]): void;
  /** Its key was revoked. */
  revoke(): void;
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
class WorkspaceFeed {
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
    for (const lease of this.leases) if (lease.keyId && gone.has(lease.keyId)) lease.revoke();
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
class FeedHub {
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
function hubOf(runtime: Runtime): FeedHub {
  let hub = hubs.get(runtime.wakeups);
  if (!hub) {
    hub = new FeedHub(runtime.db, runtime.wakeups);
    hubs.set(runtime.wakeups, hub);
  }
  return hub;
}
