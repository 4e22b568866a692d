/**
 * Leases and fencing of runs (docs/contract.md §4.16). A running run holds a lease until
 * `lease_expires_at`; its agent renews it with heartbeats and checkpoints. Once it lapses, the run is
 * the service's to end (server/domain/runs/lease-expiry.ts) and nothing the run's agent sends is
 * written any more: its writes are refused with 409 `lease_expired`, so an agent that wakes after
 * its task went to another can never write over the new holder's work.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Tx } from '@/db';
import { query } from '@/db';
import { AppError } from '@/server/errors';
import type { RunRow } from '../hierarchy/records';

export const DEFAULT_LEASE_SECONDS = 300;
export const MIN_LEASE_SECONDS = 5;
export const MAX_LEASE_SECONDS = 3600;

/** When a lease of `seconds` taken at `now` lapses. */
export const leaseUntil = (now: Date, seconds: number): Date => new Date(now.getTime() + seconds * 1000);

/** Whether the run's lease has lapsed: it ran past its lease, or the service already failed it for that. */
function leaseLapsed(run: Pick<RunRow, 'status' | 'leaseExpiresAt' | 'failureReason'>, now: Date): boolean {
  if (run.failureReason === 'lease_expired') return true;
  return run.status === 'running' && run.leaseExpiresAt !== null && run.leaseExpiresAt.getTime() <= now.getTime();
}

/** leaseLapsed as a condition on a row of `runs`, for services that read no run row. */
export const leaseLapsedSql = (now: Date): SQL =>
  sql`(failure_reason = 'lease_expired' or (status = 'running' and lease_expires_at <= ${now.toISOString()}::timestamptz))`;

/** 409 lease_expired for the run of fence `fence`. */
export function leaseExpiredError(run: { runId: string; fence: number }): AppError {
  return new AppError(
    'lease_expired',
    `The run's lease lapsed: nothing from this run is written any more, and its task may be another agent's.`,
    run,
  );
}

/**
 * Refuses a write by or about `run` once its lease has lapsed: 409 `lease_expired`, naming the run
 * and its fence. Callers check it before they write anything.
 */
export function assertLeaseHeld(run: Pick<RunRow, 'id' | 'fence' | 'status' | 'leaseExpiresAt' | 'failureReason'>, now: Date): void {
  if (leaseLapsed(run, now)) throw leaseExpiredError({ runId: run.id, fence: run.fence });
}

/** The fence each task's next run gets: one more than the most its runs have had (1 for a task's first run). */
export async function nextFences(tx: Tx, taskIds: readonly string[]): Promise<Map<string, number>> {
  const next = new Map(taskIds.map((id) => [id, 1]));
  if (taskIds.length === 0) return next;
  const rows = await query<{ task_id: string; fence: number }>(
    tx,
    sql`select task_id, max(fence) as fence from runs
         where task_id in (${sql.join(
           taskIds.map((id) => sql`${id}::uuid`),
           sql`, `,
         )}) group by task_id`,
  );
  for (const r of rows) next.set(r.task_id, Number(r.fence) + 1);
  return next;
}
