/**
 * The lease-expiry job: ends the runs whose lease lapsed (docs/contract.md §4.16). Each becomes
 * `failed` with failure_reason `lease_expired`, in a `run.lease_expired` event by the system actor,
 * and its task is ready again (`todo`, for the next claim). It runs every second on one instance at
 * a time (its lease in job_leases), reading the lapsed leases off runs_lease_idx, soonest first.
 */
import { and, eq, lte, asc } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import { runs } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { isStoreUnavailable } from '@/server/errors';
import { INSTANCE_ID, releaseLease, takeLease } from '@/server/job-lease';
import { describeError, log } from '@/server/log';
import { countLapsedLease } from '@/server/metrics';
import { systemActor } from '../actor';
import { writeStatusChanges, type StatusChange } from '../status-changes';
import { taskMove, taskOf } from './hierarchy';
import { findRun } from './view';

const BATCH = 100;
const LEASE = 'run-lease-expiry';
/** Long enough for a batch; given back as soon as the pass is done. */
const LEASE_MS = 30_000;

/** Fails the run if its lease has lapsed by `now` and it is still running; whether it did. */
async function expireIfLapsed(tx: Tx, workspaceId: string, runId: string, now: Date): Promise<boolean> {
  await lockWorkspaceLedger(tx, workspaceId); // the lock order of every change to runs
  const run = await findRun(tx, workspaceId, runId);
  // A heartbeat, a finish or another instance's pass that committed first wins.
  if (!run || run.status !== 'running' || run.leaseExpiresAt === null || run.leaseExpiresAt > now) return false;
  const task = await taskOf(tx, run);
  const changes: StatusChange[] = [
    {
      level: 'run',
      id: run.id,
      from: run.status,
      to: 'failed',
      pauseId: null,
      resumeStatus: null,
      eventType: 'run.lease_expired',
      run: { ...run, finishedAt: now },
      failureReason: 'lease_expired',
    },
  ];
  // Not `failed`, as a run its agent failed leaves it: the work was never finished, so it is ready again.
  if (task.status !== 'todo') changes.push(taskMove(task, 'todo'));
  const cause = { run_id: run.id, reason: 'lease_expired', lease_expired_at: run.leaseExpiresAt.toISOString() };
  const actor = await systemActor(tx, workspaceId, 'system:lease-expiry');
  await appendEvents(tx, actor, await writeStatusChanges(tx, workspaceId, changes, now, cause), now);
  return true;
}

/**
 * One pass: fails every run whose lease lapsed by now, unless another instance holds the job's
 * lease (then null). One run that cannot be failed is logged and passed over.
 */
export async function expireLapsedLeases(db: Database, opts: { now?: Date; holder?: string } = {}): Promise<number | null> {
  const holder = opts.holder ?? INSTANCE_ID;
  if (!(await takeLease(db, LEASE, LEASE_MS, holder))) return null;
  const now = opts.now ?? new Date();
  let failed = 0;
  try {
    for (;;) {
      const lapsed = await db
        .select({ id: runs.id, workspaceId: runs.workspaceId })
        .from(runs)
        .where(and(lte(runs.leaseExpiresAt, now), eq(runs.status, 'running')))
        .orderBy(asc(runs.leaseExpiresAt))
        .limit(BATCH);
      let passed = 0;
      for (const r of lapsed) {
        try {
          if (await db.transaction((tx) => expireIfLapsed(tx, r.workspaceId, r.id, now))) {
            failed++;
            countLapsedLease();
          } else passed++;
        } catch (err) {
          if (isStoreUnavailable(err)) throw err;
          passed++;
          log('error', 'lease expiry failed', { runId: r.id, error: describeError(err) });
        }
      }
      // A full batch all failed: there may be more. Anything passed over waits for the next pass.
      if (lapsed.length < BATCH || passed > 0) return failed;
    }
  } finally {
    await releaseLease(db, LEASE, holder);
  }
}
