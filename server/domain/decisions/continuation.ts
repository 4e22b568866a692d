/**
 * What happens when a decision that a run is paused for is approved, as the agent asked in
 * its attention record (continuation.strategy): `resume_session` resumes that run; `restart_task`
 * re-dispatches the task (the paused run is cancelled, the task goes back to `todo` and a new run
 * is queued); `manual` (or no strategy) leaves it to the agent. Runs in the same transaction as
 * the ruling (which holds the ledger lock), at its instant; each change's event goes back to the
 * ruling, which appends them with its own in one append.
 */
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionAttention, runs, tasks } from '@/db/schema';
import type { NewEvent } from '@/server/ledger/append';
import type { Actor } from '../actor';
import { runRecord, type RunRow } from '../hierarchy/records';
import { writeStatusChanges, type StatusChange, type StatusEventType } from '../status-changes';
import { followTask, taskMove, workIsOpen, workOf } from '../runs/hierarchy';
import { nextFences } from '../runs/lease';
import { newRun } from '../runs/runs';
import { cancelDecisionsOfRuns } from './cancel-with-run';
import type { DecisionRow } from './view';

type ContinuationOutcome =
  { action: 'none' } | { action: 'resumed'; runId: string } | { action: 'redispatched'; runId: string; previousRunId: string };

/** What the approval carried out, and the events of its changes (none when it carried out nothing). */
interface Continued {
  outcome: ContinuationOutcome;
  events: NewEvent[];
}

const NONE: Continued = { outcome: { action: 'none' }, events: [] };

export async function continueAfterApproval(tx: Tx, actor: Actor, decision: DecisionRow, now: Date): Promise<Continued> {
  if (!decision.runId) return NONE;
  const [attention] = await tx
    .select({ strategy: decisionAttention.continuationStrategy })
    .from(decisionAttention)
    .where(eq(decisionAttention.decisionId, decision.id));
  const strategy = attention?.strategy;
  if (strategy !== 'resume_session' && strategy !== 'restart_task') return NONE;

  // Only a run paused for this very decision: a run paused for another reason stays paused.
  const [found] = await tx
    .select({ run: runs, task: { id: tasks.id, status: tasks.status } })
    .from(runs)
    .innerJoin(tasks, eq(tasks.id, runs.taskId))
    .where(and(eq(runs.id, decision.runId), eq(runs.workspaceId, actor.workspaceId)));
  if (!found || found.run.status !== 'paused' || found.run.pausedForDecisionId !== decision.id) return NONE;
  const { run, task } = found;
  // Nothing is resumed or re-dispatched while the task is finished or the work above it is paused
  // or cancelled: the ruling then only ends the hold (hold.ts), and the run waits on its own.
  const work = await workOf(tx, actor.workspaceId, task.id);
  if (!work || !workIsOpen(work)) return NONE;

  const cause = { decision_id: decision.id, reason: `decision approved (${strategy})` };
  const runChange = (to: RunRow['status'], eventType: StatusEventType): StatusChange => ({
    level: 'run',
    id: run.id,
    from: run.status,
    to,
    pauseId: null,
    resumeStatus: null,
    eventType,
    run,
    pausedForDecisionId: null,
  });

  if (strategy === 'resume_session') {
    const changes = [runChange('running', 'run.resumed')];
    const follows = followTask(task, { status: 'running', pausedForDecisionId: null });
    if (follows) changes.push(follows);
    const events = await writeStatusChanges(tx, actor.workspaceId, changes, now, cause);
    return { outcome: { action: 'resumed', runId: run.id }, events };
  }

  const fence = (await nextFences(tx, [run.taskId])).get(run.taskId)!;
  const next = newRun({
    workspaceId: actor.workspaceId,
    taskId: run.taskId,
    agentId: run.agentId,
    status: 'queued',
    at: now,
    fence,
    leaseSeconds: run.leaseSeconds,
  });
  await tx.insert(runs).values(next);
  const changes: StatusChange[] = [runChange('cancelled', 'run.cancelled')];
  const events: NewEvent[] = await writeStatusChanges(tx, actor.workspaceId, changes, now, cause);
  events.push({ aggregateType: 'run', aggregateId: next.id, eventType: 'run.created', payload: { ...runRecord(next), ...cause } });
  const redispatch = taskMove(task, 'todo', 'task.redispatched');
  events.push(
    ...(await writeStatusChanges(tx, actor.workspaceId, [redispatch], now, { ...cause, previous_run_id: run.id, run_id: next.id })),
  );
  // Other decisions still pending on the cancelled run go with it.
  events.push(...(await cancelDecisionsOfRuns(tx, actor.workspaceId, [run.id], now)));
  return { outcome: { action: 'redispatched', runId: next.id, previousRunId: run.id }, events };
}
