/**
 * What happens when a decision that a run is paused for is approved, as the agent asked in
 * its attention record (continuation.strategy): `resume_session` resumes that run; `restart_task`
 * re-dispatches the task (the paused run is cancelled, the task goes back to `todo` and a new run
 * is queued); `manual` (or no strategy) leaves it to the agent. Runs in the same transaction as
 * the ruling, each change with its event.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionAttention, runs, tasks } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import type { Actor } from '../actor';
import type { DecisionRow } from './view';

export type ContinuationOutcome =
  { action: 'none' } | { action: 'resumed'; runId: string } | { action: 'redispatched'; runId: string; previousRunId: string };

export async function continueAfterApproval(tx: Tx, actor: Actor, decision: DecisionRow): Promise<ContinuationOutcome> {
  if (!decision.runId) return { action: 'none' };
  const [attention] = await tx
    .select({ strategy: decisionAttention.continuationStrategy })
    .from(decisionAttention)
    .where(eq(decisionAttention.decisionId, decision.id));
  const strategy = attention?.strategy;
  if (strategy !== 'resume_session' && strategy !== 'restart_task') return { action: 'none' };

  const now = new Date();
  const cause = { decision_id: decision.id, reason: `decision approved (${strategy})` };
  // Only a run paused for this very decision: a run paused for another reason stays paused.
  const pausedForThis = and(
    eq(runs.id, decision.runId),
    eq(runs.workspaceId, actor.workspaceId),
    eq(runs.status, 'paused'),
    eq(runs.pausedForDecisionId, decision.id),
  );
  if (strategy === 'resume_session') {
    const [resumed] = await tx
      .update(runs)
      .set({ status: 'running', pausedForDecisionId: null, updatedAt: now, version: sql`${runs.version} + 1` })
      .where(pausedForThis)
      .returning({ id: runs.id });
    if (!resumed) return { action: 'none' };
    await appendEvents(
      tx,
      actor,
      [
        {
          aggregateType: 'run',
          aggregateId: resumed.id,
          eventType: 'run.resumed',
          payload: { run_id: resumed.id, status: 'running', ...cause },
        },
      ],
      now,
    );
    return { action: 'resumed', runId: resumed.id };
  }

  // A task that is done or cancelled is not re-dispatched.
  const [task] = await tx
    .select({ status: tasks.status })
    .from(tasks)
    .innerJoin(runs, eq(runs.taskId, tasks.id))
    .where(and(eq(runs.id, decision.runId), eq(tasks.workspaceId, actor.workspaceId)));
  if (!task || task.status === 'done' || task.status === 'cancelled') return { action: 'none' };
  const [cancelled] = await tx
    .update(runs)
    .set({ status: 'cancelled', pausedForDecisionId: null, updatedAt: now, version: sql`${runs.version} + 1` })
    .where(pausedForThis)
    .returning({ id: runs.id, taskId: runs.taskId, agentId: runs.agentId });
  if (!cancelled) return { action: 'none' };
  const runId = randomUUID();
  await tx.insert(runs).values({
    id: runId,
    workspaceId: actor.workspaceId,
    taskId: cancelled.taskId,
    agentId: cancelled.agentId,
    status: 'queued',
    createdAt: now,
    updatedAt: now,
  });
  await tx
    .update(tasks)
    .set({ status: 'todo', updatedAt: now, version: sql`${tasks.version} + 1` })
    .where(and(eq(tasks.id, cancelled.taskId), eq(tasks.workspaceId, actor.workspaceId)));
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'run',
        aggregateId: cancelled.id,
        eventType: 'run.cancelled',
        payload: { run_id: cancelled.id, status: 'cancelled', ...cause },
      },
      {
        aggregateType: 'run',
        aggregateId: runId,
        eventType: 'run.created',
        payload: { run_id: runId, task_id: cancelled.taskId, agent_id: cancelled.agentId, status: 'queued', ...cause },
      },
      {
        aggregateType: 'task',
        aggregateId: cancelled.taskId,
        eventType: 'task.redispatched',
        payload: { task_id: cancelled.taskId, status: 'todo', previous_run_id: cancelled.id, run_id: runId, ...cause },
      },
    ],
    now,
  );
  return { action: 'redispatched', runId, previousRunId: cancelled.id };
}
