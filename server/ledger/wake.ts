/**
 * Wake-ups for open event-stream leases: "the ledger of workspace W moved". A commit in this
 * process wakes its leases at once; on PostgreSQL it is also sent as NOTIFY (coalesced: one
 * statement per tick for every workspace that moved, retried while it fails), and a LISTEN
 * connection turns other instances' commits into wake-ups here. A NOTIFY's payload is
 * "<workspace id> <origin>": the sending process hears its own NOTIFY too, and ignores it, since
 * its leases were woken at the commit (without that every commit cost each feed a second, empty read).
 *
 * The channel is healthy when every commit that can concern this process reaches it: always on
 * PGlite (one process), and on PostgreSQL while the LISTEN connection is up. While it is healthy,
 * leases read only when woken; while it is not, they poll. When LISTEN comes back, every
 * subscribed workspace is woken once, since signals sent in between were lost.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { describeError, log } from '@/server/log';

export const WAKE_CHANNEL = 'aws_ledger';

export type Notifier = (workspaceIds: string[]) => Promise<void>;

/** How long a failed NOTIFY waits before it is sent again. */
const NOTIFY_RETRY_MS = 1000;

export class LedgerWakeups {
  private readonly emitter = new EventEmitter();
  private readonly health = new EventEmitter();
  /** Hears every workspace's moves (the webhook dispatcher), beside the per-workspace subscribers. */
  private readonly anyMove = new EventEmitter();
  private pending = new Set<string>();
  private scheduled = false;
  private sending: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private listening = false;
  private closed = false;
  /** Names this process in the NOTIFYs it sends. */
  readonly origin = randomUUID();

  /**
   * `notifier` (PostgreSQL) sends this process's commits to the other instances; with it, the
   * channel is healthy only while `setListening(true)` says other instances' commits are heard.
   */
  constructor(private readonly notifier?: Notifier) {
    this.emitter.setMaxListeners(0);
    this.health.setMaxListeners(0);
    this.anyMove.setMaxListeners(0);
  }

  /** True when no commit can go unsignalled: leases need not poll. */
  get healthy(): boolean {
    return !this.notifier || this.listening;
  }

  /** A transaction that appended to `workspaceId` committed in this process (the database says so: server/runtime.ts). */
  committed(workspaceId: string): void {
    this.emitter.emit(workspaceId);
    this.anyMove.emit('moved', workspaceId);
    if (!this.notifier || this.closed) return;
    this.pending.add(workspaceId);
    if (this.scheduled || this.retry) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.send();
    });
  }

  /**
   * A NOTIFY heard through LISTEN: "<workspace id> <origin>", or a bare workspace id (sent by hand
   * or by a tool). This process's own are ignored.
   */
  heard(payload: string): void {
    const [workspaceId, origin] = payload.split(' ', 2);
    if (!workspaceId || origin === this.origin) return;
    this.emitter.emit(workspaceId);
    this.anyMove.emit('moved', workspaceId);
  }

  /** The LISTEN connection is up (again) or lost. Coming back wakes every subscribed workspace. */
  setListening(up: boolean): void {
    const wasHealthy = this.healthy;
    const wasListening = this.listening;
    this.listening = up;
    if (this.healthy !== wasHealthy) this.health.emit('change', this.healthy);
    if (up && !wasListening) for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  /** Calls `wake` whenever the workspace's ledger moves; returns the unsubscribe function. */
  subscribe(workspaceId: string, wake: () => void): () => void {
    this.emitter.on(workspaceId, wake);
    return () => this.emitter.off(workspaceId, wake);
  }

  /** Calls `moved` with the workspace whenever any workspace's ledger moves; returns the unsubscribe function. */
  onAnyMove(moved: (workspaceId: string) => void): () => void {
    this.anyMove.on('moved', moved);
    return () => this.anyMove.off('moved', moved);
  }

  /** Calls `change` when `healthy` changes; returns the unsubscribe function. */
  onHealthChange(change: (healthy: boolean) => void): () => void {
    this.health.on('change', change);
    return () => this.health.off('change', change);
  }

  /** Sends the NOTIFYs still pending (once), then sends no more. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    await this.sending;
    if (this.notifier && this.pending.size > 0) await this.send();
    this.pending.clear();
  }

  private async send(): Promise<void> {
    if (this.sending || this.pending.size === 0) return this.sending ?? undefined;
    const ids = [...this.pending];
    this.pending = new Set();
    let failed = false;
    this.sending = this.notifier!(ids.map((id) => `${id} ${this.origin}`)).catch((err: unknown) => {
      failed = true;
      log('warn', 'ledger NOTIFY failed; retrying', { error: describeError(err) });
      for (const id of ids) this.pending.add(id);
    });
    await this.sending;
    this.sending = null;
    if (this.pending.size === 0 || this.closed || this.retry) return;
    if (failed) {
      // Never a tight loop while the database is unreachable.
      this.retry = setTimeout(() => {
        this.retry = null;
        void this.send();
      }, NOTIFY_RETRY_MS);
      this.retry.unref();
    } else {
      // Commits that came while this statement was in flight: their own statement, now.
      void this.send();
    }
  }
}
