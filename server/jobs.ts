/**
 * Work the service does on its own: timing out overdue decisions every few seconds, escalating
 * decisions whose policy's escalation step came due every second (server/domain/decisions/escalation.ts), failing runs
 * whose lease lapsed every second (server/domain/runs/lease-expiry.ts), deleting what
 * is kept only for a while once a minute (server/retention.ts: expired idempotency records, ended
 * dedup claims, rate-limit windows and attempt counters, old webhook delivery attempts), and
 * delivering the ledger to webhook endpoints (server/webhooks/dispatcher.ts), and adding new events
 * to each workspace's Merkle tree and signing its checkpoint (server/ledger/integrator.ts).
 */
import { sql } from 'drizzle-orm';
import { query, type Database } from '@/db';
import { sweepDecisionTimeouts } from './domain/decisions/timeouts';
import { expireLapsedLeases } from './domain/runs/lease-expiry';
import { escalateDueDecisions } from './domain/decisions/escalation';
import { attemptLimitsOf } from './auth/sign-in';
import { describeError, log } from './log';
import { jobSucceeded, measureArtifactStorageWith, measureDeliveryLagWith, measureTreeAlarmsWith, type DeliveryLag } from './metrics';
import { storedBytesTotals } from './domain/artifacts/quota';
import { countTreeAlarms, runIntegrator } from './ledger/integrator';
import { runRetention } from './retention';
import { signingOf, type Runtime } from './runtime';
import { WebhookDispatcher } from './webhooks/dispatcher';

/** How often overdue decisions are timed out (reads of a decision also do it for what they show). */
const TIMEOUT_SWEEP_MS = 5_000;
/** How often the retention job runs (on one instance at a time). */
const RETENTION_MS = 60_000;
/** How often due escalation steps of decision policies are looked for: a step reaches its people within this (+ the pass). */
const ESCALATION_MS = 1_000;
/** How often lapsed run leases are looked for: a run is failed within its lease_seconds + this (+ the pass). */
const LEASE_EXPIRY_MS = 1_000;

/** Runs `job` every `everyMs`, never overlapping a slow run with the next; returns the stopper. */
function every(name: string, everyMs: number, job: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    job()
      .then(() => jobSucceeded(name))
      .catch((err: unknown) => log('warn', `${name} failed`, { error: describeError(err) }))
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
export function startBackgroundJobs(
  runtime: Runtime,
  opts: { sweepMs?: number; retentionMs?: number; leaseExpiryMs?: number } = {},
): () => Promise<void> {
  measureDeliveryLagWith(() => deliveryLag(runtime.db));
  measureTreeAlarmsWith(() => countTreeAlarms(runtime.db));
  measureArtifactStorageWith(() => storedBytesTotals(runtime.db));
  let stopping = false;
  const webhooks = new WebhookDispatcher(runtime);
  webhooks.start();
  const stops = [
    every('decision timeout sweep', opts.sweepMs ?? TIMEOUT_SWEEP_MS, () => sweepDecisionTimeouts(runtime.db)),
    every('decision escalation', ESCALATION_MS, () => escalateDueDecisions(runtime)),
    every('run lease expiry', opts.leaseExpiryMs ?? LEASE_EXPIRY_MS, () => expireLapsedLeases(runtime.db)),
    every('ledger integrator', runtime.env.CHECKPOINT_INTERVAL_MS, () =>
      runIntegrator(runtime.db, signingOf(runtime), runtime.env.CHECKPOINT_INTERVAL_MS),
    ),
    every('retention', opts.retentionMs ?? RETENTION_MS, () =>
      runRetention(
        runtime.db,
        { deliveryLogDays: runtime.env.DELIVERY_LOG_DAYS, attemptLimits: attemptLimitsOf(runtime) },
        { stopped: () => stopping },
      ),
    ),
  ];
  return async () => {
    stopping = true;
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
