/**
 * Wake-ups for open event-stream leases: "the ledger of workspace W moved". A commit in this
 * process wakes its leases at once; on PostgreSQL it is also sent as NOTIFY (coalesced: one
 * statement per tick for every workspace that moved), and a LISTEN connection turns other
 * instances' commits into wake-ups here. Leases still poll as a fallback, so a lost signal only
 * delays delivery.
 */
import { EventEmitter } from 'node:events';
import { log } from '@/server/log';

export const WAKE_CHANNEL = 'aws_ledger';

export type Notifier = (workspaceIds: string[]) => Promise<void>;

export class LedgerWakeups {
  private readonly emitter = new EventEmitter();
  private pending = new Set<string>();
  private scheduled = false;

  constructor(private readonly notifier?: Notifier) {
    this.emitter.setMaxListeners(0);
  }

  /** A transaction that appended to `workspaceId` committed in this process. */
  committed(workspaceId: string): void {
    this.emitter.emit(workspaceId);
    if (!this.notifier) return;
    this.pending.add(workspaceId);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      const ids = [...this.pending];
      this.pending = new Set();
      this.scheduled = false;
      this.notifier!(ids).catch((err: unknown) => log('warn', 'ledger NOTIFY failed; leases fall back to polling', { error: String(err) }));
    });
  }

  /** Another instance's commit, heard through LISTEN. */
  received(workspaceId: string): void {
    this.emitter.emit(workspaceId);
  }

  /** Calls `wake` whenever the workspace's ledger moves; returns the unsubscribe function. */
  subscribe(workspaceId: string, wake: () => void): () => void {
    this.emitter.on(workspaceId, wake);
    return () => this.emitter.off(workspaceId, wake);
  }
}
