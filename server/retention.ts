/**
 * The retention job: what the service keeps only for a while is deleted once its time is over, so
 * no table grows without end.
 *
 * - idempotency records past their expiry (IDEMPOTENCY_TTL_HOURS after the request);
 * - dedup claims that ended (released or expired), each with a `dedup.pruned` ledger event;
 * - rate-limit windows that ended, and sign-in attempt counters whose window ended;
 * - webhook delivery attempts older than DELIVERY_LOG_DAYS;
 * - WebAuthn challenges nobody answered within their five minutes;
 * - the stored bytes of artifacts, in workspaces that keep them only for a while
 *   (artifact_content_days), each with `artifact.content_removed` events; their digests stay.
 *
 * One instance at a time runs it (a lease in `job_leases`, server/job-lease.ts). It deletes in
 * batches of BATCH rows, each its own short statement (its own transaction), oldest first, and goes
 * on while a batch comes back full: no long lock, no transaction holding a million deleted rows,
 * and writes carry on between the batches.
 */
import type { Database } from '@/db';
import { pruneAttemptCounters } from './auth/attempt-limits';
import type { AttemptLimits } from './auth/attempt-limits';
import { pruneEndedClaims } from './domain/dedup/claims';
import { pruneExpiredIdempotencyRecords } from './domain/idempotency';
import { pruneDeliveries } from './domain/webhooks/endpoints';
import { pruneChallenges } from './domain/passkeys/challenges';
import { pruneArtifactContents } from './domain/artifacts/artifacts';
import { INSTANCE_ID, releaseLease, takeLease } from './job-lease';
import { countRetained } from './metrics';
import { pruneRateLimitCounters } from './rate-limits';

/** Rows a statement deletes at most. */
const BATCH = 1000;
/** How long the lease holds without being renewed; it is renewed after every batch. */
const LEASE_MS = 5 * 60_000;
const LEASE = 'retention';

export interface RetentionSettings {
  /** DELIVERY_LOG_DAYS. */
  deliveryLogDays: number;
  /** The sign-in attempt window (its counters are kept while it lasts). */
  attemptLimits: AttemptLimits;
}

export interface RetentionOptions {
  /** What counts as now (tests move it forward instead of waiting). */
  now?: Date;
  batchSize?: number;
  /** The lease holder (tests stand in for other instances). */
  holder?: string;
  /** Stops between two batches when it returns true (the process is stopping). */
  stopped?: () => boolean;
  /** The pause after a full batch, as a share of the time that batch took (default 1). */
  pause?: number;
}

/** How many rows of each table a run deleted, and in how many statements. */
export interface RetentionReport {
  idempotency_records: number;
  dedup_claims: number;
  rate_limit_counters: number;
  attempt_counters: number;
  webhook_deliveries: number;
  webauthn_challenges: number;
  artifact_contents: number;
  batches: number;
}

/**
 * Runs the job once to the end (or until stopped, or its lease is lost). Resolves null without
 * doing anything when another instance holds the lease.
 */
export async function runRetention(
  db: Database,
  settings: RetentionSettings,
  opts: RetentionOptions = {},
): Promise<RetentionReport | null> {
  const holder = opts.holder ?? INSTANCE_ID;
  const batchSize = opts.batchSize ?? BATCH;
  const now = opts.now ?? new Date();
  if (!(await takeLease(db, LEASE, LEASE_MS, holder))) return null;
  const report: RetentionReport = {
    idempotency_records: 0,
    dedup_claims: 0,
    rate_limit_counters: 0,
    attempt_counters: 0,
    webhook_deliveries: 0,
    webauthn_challenges: 0,
    artifact_contents: 0,
    batches: 0,
  };
  let going = true;
  // Runs `step` (one batch) while batches come back full, the lease is still ours and we are not
  // stopping. After a full batch it pauses as long as the batch took: a backlog (the first run
  // after an upgrade, a day of records) goes at half the rate the database could delete it, and
  // the writes beside it keep the other half of its disk (npm run bench: Retention).
  const drain = async (table: keyof Omit<RetentionReport, 'batches'>, step: () => Promise<number>) => {
    while (going) {
      const started = performance.now();
      const rows = await step();
      report.batches++;
      report[table] += rows;
      countRetained(table, rows);
      if (rows < batchSize) return;
      await new Promise((resolve) => setTimeout(resolve, (performance.now() - started) * (opts.pause ?? 1)));
      going = !opts.stopped?.() && (await takeLease(db, LEASE, LEASE_MS, holder));
    }
  };
  try {
    await drain('idempotency_records', () => pruneExpiredIdempotencyRecords(db, now, batchSize));
    await drain('dedup_claims', () => pruneEndedClaims(db, now, batchSize));
    await drain('rate_limit_counters', () => pruneRateLimitCounters(db, now, batchSize));
    await drain('attempt_counters', () => pruneAttemptCounters(db, settings.attemptLimits, now, batchSize));
    await drain('webhook_deliveries', () => pruneDeliveries(db, settings.deliveryLogDays, now, batchSize));
    await drain('webauthn_challenges', () => pruneChallenges(db, now, batchSize));
    await drain('artifact_contents', () => pruneArtifactContents(db, now, batchSize));
  } finally {
    if (going) await releaseLease(db, LEASE, holder);
  }
  return report;
}
