/**
 * Delivering the ledger to webhook endpoints: at least once, in sequence order per endpoint.
 *
 * Each endpoint's outbox is its cursor into the ledger (db/schema/webhooks.ts). An instance takes
 * an endpoint that has events after its cursor and is due (a lease on the row, taken with
 * SKIP LOCKED, so several instances on one PostgreSQL never deliver to one endpoint at once), then
 * delivers the events after the cursor one at a time:
 *
 * - a 2xx answer records the attempt and moves the cursor past the event, in one statement that
 *   also renews the lease (and fails if the lease was lost: the instance stops there);
 * - anything else, or no answer within WEBHOOK_TIMEOUT_MS, records the attempt, schedules the
 *   next one with exponential backoff and jitter, and lets the endpoint go; once the event has
 *   failed for WEBHOOK_RETRY_FOR_MS the endpoint is disabled and `webhook_endpoint.disabled`
 *   appended, in one transaction.
 *
 * An instance that dies mid-delivery holds its lease until it runs out; then another (or its
 * successor) takes the endpoint and sends the same event again, with the same webhook-id, so a
 * receiver can drop the repeat. Stopping cleanly aborts requests in flight and gives leases back.
 *
 * Commits wake the dispatcher for workspaces that have endpoints (server/ledger/wake.ts, which also
 * carries other instances' commits); a poll every WEBHOOK_POLL_MS finds due retries.
 *
 * This file schedules: what to send to whom and when to try again. The SQL of leases, cursors and
 * attempts is server/webhooks/store.ts, the HTTP request server/webhooks/sender.ts, and disabling
 * an endpoint server/domain/webhooks/disable-endpoint.ts.
 */ import { randomUUID } from 'node:crypto';
import { systemActor } from '@/server/domain/actor';
import { disableEndpoint } from '@/server/domain/webhooks/disable-endpoint';
import { subscribes } from '@/server/domain/webhooks/endpoints';
import type { LedgerEvent } from '@/server/ledger/canonical';
import type { EventType } from '@/server/ledger/event-types';
import { readEvents } from '@/server/ledger/read';
import { describeError, log } from '@/server/log';
import type { Runtime } from '@/server/runtime';
import { signingSecrets, WebhookSender, type Outcome } from './sender';
import { DeliveryStore, type EndpointRow, type FailedAttempt } from './store';
import { countDelivery, jobSucceeded } from '@/server/metrics';

/** Events read from an endpoint's cursor at a time. */
const BATCH = 50;
/** Endpoints one instance delivers to at once. */
const CONCURRENCY = 8;
/** Retries never wait longer than this, so a receiver that comes back is heard from within the hour. */
const MAX_DELAY_MS = 3_600_000;

/** The delay before attempt `failures + 1`: doubling from `baseMs`, capped, with "equal jitter" (half fixed, half random). */
export function retryDelay(baseMs: number, failures: number, random: () => number = Math.random): number {
  const exp = Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

export interface DispatcherOptions {
  /** Overrides WEBHOOK_POLL_MS. */
  pollMs?: number;
}

export class WebhookDispatcher {
  /** Names this instance in the leases it holds. */
  readonly instance = randomUUID();
  private readonly running = new Map<string, Promise<void>>();
  private readonly store: DeliveryStore;
  private readonly sender: WebhookSender;
  /** Workspaces with an enabled endpoint (as of the last poll): only their commits wake the dispatcher. */
  private watched = new Set<string>();
  private ticking = false;
  private again = false;
  private stopped = false;
  private poll: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly runtime: Runtime,
    private readonly opts: DispatcherOptions = {},
  ) {
    const { db, env } = runtime;
    this.store = new DeliveryStore(db, this.instance, env.WEBHOOK_LEASE_MS);
    this.sender = new WebhookSender(env.WEBHOOKS_ALLOW_PRIVATE, env.WEBHOOK_TIMEOUT_MS);
  }

  start(): void {
    this.unsubscribe = this.runtime.wakeups.onAnyMove((workspaceId) => {
      if (this.watched.has(workspaceId)) this.kick();
    });
    const every = this.opts.pollMs ?? this.runtime.env.WEBHOOK_POLL_MS;
    const loop = () => {
      if (this.stopped) return;
      void this.refreshWatched()
        .catch((err: unknown) => log('warn', 'webhook dispatcher could not read endpoints', { error: describeError(err) }))
        .finally(() => {
          this.kick();
          if (!this.stopped) {
            this.poll = setTimeout(loop, every);
            this.poll.unref();
          }
        });
    };
    loop();
  }

  /** Aborts deliveries in flight (they are sent again later) and gives the leases back. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.poll) clearTimeout(this.poll);
    this.sender.abort();
    await Promise.allSettled(this.running.values());
    this.sender.close();
  }

  private async refreshWatched(): Promise<void> {
    this.watched = await this.store.watchedWorkspaces();
  }

  /** Looks for due endpoints now (or once more after the look in progress). */
  kick(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((err: unknown) => log('warn', 'webhook dispatcher could not claim endpoints', { error: describeError(err) }))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async tick(): Promise<void> {
    const room = CONCURRENCY - this.running.size;
    if (room <= 0) return;
    const claimed = await this.store.claim(room, [...this.running.keys()]);
    // The claim query ran: the dispatcher is alive and reaching the database.
    jobSucceeded('webhook dispatch');
    for (const row of claimed) {
      const run = this.deliverTo(row)
        .catch((err: unknown) => log('warn', 'webhook delivery failed', { endpointId: row.id, error: describeError(err) }))
        .finally(() => {
          this.running.delete(row.id);
          // A slot is free, and the endpoint may have more (or others may be waiting).
          this.kick();
        });
      this.running.set(row.id, run);
    }
  }

  private async deliverTo(row: EndpointRow): Promise<void> {
    const secrets = signingSecrets(this.runtime.secrets.webhook, row);
    let cursor = row.deliveredSequence;
    let failures = row.attempts;
    try {
      for (;;) {
        if (this.stopped) return;
        const events = await readEvents(this.runtime.db, row.workspaceId, { after: cursor, limit: BATCH });
        if (events.length === 0) return;
        let passed = cursor;
        for (const event of events) {
          // A test delivery goes to its own endpoint only. (The type is checked against the registry.)
          const forIt =
            event.eventType === ('webhook_endpoint.test' satisfies EventType)
              ? event.aggregateId === row.id
              : subscribes(row.eventTypes, event.eventType);
          if (!forIt) {
            passed = event.sequence;
            continue;
          }
          const outcome = await this.sender.send(row.url, event, secrets);
          if (outcome.aborted) {
            if (passed > cursor) await this.store.advance(row.id, passed);
            return;
          }
          countDelivery(outcome.ok ? 'succeeded' : 'failed');
          if (!outcome.ok) {
            await this.failed(row, event, outcome, failures + 1, passed);
            return;
          }
          if (!(await this.store.succeeded(row.id, event, outcome, failures + 1))) return; // the lease was lost
          cursor = passed = event.sequence;
          failures = 0;
        }
        if (passed > cursor) {
          if (!(await this.store.advance(row.id, passed))) return;
          cursor = passed;
        }
        if (events.length < BATCH) return;
      }
    } finally {
      await this.store.release(row.id);
    }
  }

  /**
   * Records a failed attempt and schedules the next; past the retry window, disables the endpoint
   * and appends `webhook_endpoint.disabled` instead.
   */
  private async failed(row: EndpointRow, event: LedgerEvent, o: Outcome, attempt: number, passed: number): Promise<void> {
    const { db, env } = this.runtime;
    const now = new Date();
    const failingSince = attempt === 1 || !row.failingSince ? now : row.failingSince;
    const giveUp = now.getTime() - failingSince.getTime() >= env.WEBHOOK_RETRY_FOR_MS;
    const next = giveUp ? null : new Date(now.getTime() + retryDelay(env.WEBHOOK_RETRY_BASE_MS, attempt));
    const failed: FailedAttempt = { endpointId: row.id, event, outcome: o, attempt, error: o.error ?? `HTTP ${o.statusCode}`, next };
    if (!next) {
      await db.transaction(async (tx) => {
        const actor = await systemActor(tx, row.workspaceId, 'system:webhooks');
        const input = { id: row.id, leasedBy: this.instance, event, attempts: attempt, failingSince, error: failed.error, passed, now };
        if (!(await disableEndpoint(tx, actor, input))) return;
        await this.store.recordLastAttempt(tx, failed);
      });
      log('warn', 'webhook endpoint disabled: retries exhausted', { endpointId: row.id, workspaceId: row.workspaceId });
      return;
    }
    await this.store.retryLater({ ...failed, next }, failingSince, passed);
  }
}
