/**
 * Work the service does on its own: timing out overdue decisions every few seconds, deleting
 * rate-limit windows and sign-in attempt counters whose windows have ended and webhook delivery
 * attempts older than 30 days, and delivering the
 * ledger to webhook endpoints (server/webhooks/dispatcher.ts).
 */
import { sweepDecisionTimeouts } from './domain/decisions/timeouts';
import { pruneAttemptCounters } from './auth/attempt-limits';
import { attemptLimitsOf } from './auth/sign-in';
import { pruneDeliveries } from './domain/webhooks/endpoints';
import { log } from './log';
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
