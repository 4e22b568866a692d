/**
 * Work the service does on its own: timing out overdue decisions every few seconds, deleting
 * rate-limit windows and sign-in attempt counters whose windows have ended and webhook delivery
 * attempts older than 30 days, and delivering the
 * ledger to webhook endpoints (server/webhooks/dispatcher.ts).
 */
import { sql } from 'drizzle-orm';
import { query, type Database } from '@/db';
import { sweepDecisionTimeouts } from './domain/decisions/timeouts';
import { pruneAttemptCounters } from './auth/attempt-limits';
import { attemptLimitsOf } from './auth/sign-in';
import { pruneDeliveries } from './domain/webhooks/endpoints';
import { log } from './log';
import { jobSucceeded, measureDeliveryLagWith, type DeliveryLag } from './metrics';
import { pruneRateLimitCounters, RATE_LIMIT_WINDOW_MS } from './rate-limits';
import type { Runtime } from './runtime';
import { WebhookDispatcher } from './webhooks/dispatcher';

/** How often overdue decisions are timed out (reads of a decision also do it for what they show). */
const TIMEOUT_SWEEP_MS = 5_000;

/** Runs `job` every `everyMs`, never overlapping a slow run with the next; returns the stopper. */
function every(name: string, everyMs: number, job: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    job()
      .then(() => jobSucceeded(name))
      .catch((err: unknown) => log('warn', `${name} failed`, { error: String(err) }))
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Starts the background jobs; returns a function that stops them (settling once webhook
 * deliveries in flight are aborted and their leases given back).
 */
export function startBackgroundJobs(runtime: Runtime, opts: { sweepMs?: number; pruneMs?: number } = {}): () => Promise<void> {
  measureDeliveryLagWith(() => deliveryLag(runtime.db));
  const webhooks = new WebhookDispatcher(runtime);
  webhooks.start();
  const stops = [
    every('decision timeout sweep', opts.sweepMs ?? TIMEOUT_SWEEP_MS, () =>
      sweepDecisionTimeouts(runtime.db, { onCommitted: (id) => runtime.wakeups.committed(id) }),
    ),
    every('rate-limit prune', opts.pruneMs ?? RATE_LIMIT_WINDOW_MS, async () => {
      await pruneRateLimitCounters(runtime.db);
      await pruneAttemptCounters(runtime.db, attemptLimitsOf(runtime));
      await pruneDeliveries(runtime.db);
    }),
  ];
  return async () => {
    stops.forEach((stop) => stop());
    await webhooks.stop();
  };
}

/**
 * The enabled webhook endpoints that are behind, with the age of the oldest event each has not
 * been delivered (the one after its delivered_sequence), the furthest behind first, at most 100:
 * what the delivery-lag metric shows (bounded: only endpoints behind).
 */
async function deliveryLag(db: Database): Promise<DeliveryLag[]> {
  const rows = await query<{ id: string; seconds: number | string }>(
    db,
    sql`select e.id, extract(epoch from now() - le.occurred_at::timestamptz)::float8 as seconds
          from webhook_endpoints e
          join ledger_heads h on h.workspace_id = e.workspace_id and h.sequence > e.delivered_sequence
          join ledger_events le on le.workspace_id = e.workspace_id and le.sequence = e.delivered_sequence + 1
         where e.status = 'enabled'
         order by seconds desc, e.id
         limit 100`,
  );
  return rows.map((r) => ({ endpointId: r.id, seconds: Math.max(0, Number(r.seconds)) }));
}
