/**
 * Decision timeouts (docs/contract.md §7.1): a pending decision past its due_at becomes `expired`, or
 * `declined` by `system` when its on_timeout is `decline`, with a ledger event. A background sweep
 * does it for every workspace; reads of a decision do it first for what they show, so a poller
 * never sees a pending decision that is already overdue.
 */
import { and, asc, eq, gt, lte, or } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import { decisions } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { isStoreUnavailable } from '@/server/errors';
import { describeError, log } from '@/server/log';
import { systemActor } from '../actor';
import { timeOut, type TimeoutState } from './decide';
import { releaseHold } from './hold';
import { rowChanges } from './write';

const SWEEP_BATCH = 100;

/** Times out one decision if it is still pending and due; returns whether it did. */
export async function expireIfDue(tx: Tx, workspaceId: string, decisionId: string, now = new Date()): Promise<boolean> {
  await lockWorkspaceLedger(tx, workspaceId); // the lock order of every change to existing decisions and runs
  const [row] = await tx
    .select({ id: decisions.id, status: decisions.status, dueAt: decisions.dueAt, onTimeout: decisions.onTimeout })
    .from(decisions)
    .where(and(eq(decisions.id, decisionId), eq(decisions.workspaceId, workspaceId)));
  return row ? applyTimeout(tx, workspaceId, row, now) : false;
}

/**
 * Times out `row` (read under the workspace's ledger lock) if it is pending and due (decide.ts
 * timeOut), and ends its hold on its run; returns whether it did.
 */
export async function applyTimeout(tx: Tx, workspaceId: string, row: TimeoutState, now: Date): Promise<boolean> {
  const timedOut = timeOut(row, now);
  if (!timedOut) return false;
  // Conditional on `pending`: a human ruling or another instance's sweep that committed first wins.
  const [updated] = await tx
    .update(decisions)
    .set(rowChanges(timedOut.changes))
    .where(and(eq(decisions.id, row.id), eq(decisions.status, 'pending')))
    .returning({ id: decisions.id });
  if (!updated) return false;
  const actor = await systemActor(tx, workspaceId, 'system:decision-timeouts');
  await appendEvents(tx, actor, [...timedOut.events, ...(await releaseHold(tx, workspaceId, row.id, now))], now);
  return true;
}

/**
 * Times out every overdue pending decision (of one workspace, or all); returns how many. One
 * decision that cannot be timed out is logged and passed over, never blocking the others.
 */
export async function sweepDecisionTimeouts(db: Database, opts: { workspaceId?: string; now?: Date } = {}): Promise<number> {
  const now = opts.now ?? new Date();
  let total = 0;
  let after: { dueAt: Date; id: string } | null = null;
  for (;;) {
    const conditions = [eq(decisions.status, 'pending'), lte(decisions.dueAt, now)];
    if (opts.workspaceId) conditions.push(eq(decisions.workspaceId, opts.workspaceId));
    if (after) conditions.push(or(gt(decisions.dueAt, after.dueAt), and(eq(decisions.dueAt, after.dueAt), gt(decisions.id, after.id)))!);
    const due = await db
      .select({ id: decisions.id, workspaceId: decisions.workspaceId, dueAt: decisions.dueAt })
      .from(decisions)
      .where(and(...conditions))
      .orderBy(asc(decisions.dueAt), asc(decisions.id))
      .limit(SWEEP_BATCH);
    for (const d of due) {
      try {
        if (await db.transaction((tx) => expireIfDue(tx, d.workspaceId, d.id, now))) total++;
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        log('error', 'decision timeout failed', { decisionId: d.id, error: describeError(err) });
      }
    }
    const last = due[due.length - 1];
    if (due.length < SWEEP_BATCH || !last?.dueAt) return total;
    after = { dueAt: last.dueAt, id: last.id };
  }
}
