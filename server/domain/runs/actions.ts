/**
 * The control actions of a run (pause, resume, cancel, rollback), by the run state machine's table
 * (server/domain/runs/machine.ts). Like the agent's reports (server/domain/runs/runs.ts), each
 * takes the workspace's ledger lock first, changes the run, lets the task follow, and appends the
 * events in one call.
 */
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { runCheckpoints, runs } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import type { CheckpointRow, RunRow } from '../hierarchy/records';
import { writeStatusChanges, type StatusEventType } from '../status-changes';
import { cancelDecisionsOfRuns } from '../decisions/cancel-with-run';
import { assertWorkOpen, moveRun, taskOf, workOf } from './hierarchy';
import { assertLeaseHeld } from './lease';
import { RUN_ACTIONS, verdict, type RunAction } from './machine';
import { locked, refuse } from './runs';

export interface RunActionInput {
  reason?: string;
  checkpointId?: string;
}

export interface RunActionResult {
  runId: string;
  action: RunAction;
  status: RunRow['status'];
  applied: boolean;
}

const ACTION_EVENT: Record<RunAction, StatusEventType> = {
  pause: 'run.paused',
  resume: 'run.resumed',
  cancel: 'run.cancelled',
  rollback: 'run.rolled_back',
};

/**
 * One control action on a run, by the state machine's table: applied (one run event, plus the
 * task's if its status follows), already applied (nothing written), or refused (409). Cancelling
 * a run cancels the pending decisions raised on it.
 */
export async function applyRunAction(
  tx: Tx,
  actor: Actor,
  runId: string,
  action: RunAction,
  input: RunActionInput,
): Promise<RunActionResult> {
  const run = await locked(tx, actor, runId);
  // A run whose lease lapsed is the service's to end, and its task may be another agent's.
  assertLeaseHeld(run, new Date());
  const move = RUN_ACTIONS[action];
  // The state first: a move the run's status does not allow is refused whatever the body says.
  if (verdict(move, run.status) === 'refuse') throw refuse(run, action);
  let checkpoint: CheckpointRow | undefined;
  if (action === 'rollback') {
    if (!input.checkpointId) {
      throw new AppError('validation_failed', 'rollback needs the checkpoint to go back to.', {
        issues: [{ path: 'checkpointId', message: 'is required for rollback' }],
      });
    }
    [checkpoint] = await tx
      .select()
      .from(runCheckpoints)
      .where(and(eq(runCheckpoints.id, input.checkpointId), eq(runCheckpoints.runId, run.id)));
    if (!checkpoint) {
      throw new AppError('validation_failed', 'checkpointId is not a checkpoint of this run.', {
        issues: [{ path: 'checkpointId', message: 'must be a checkpoint of this run' }],
      });
    }
  } else if (input.checkpointId !== undefined) {
    throw new AppError('validation_failed', 'checkpointId belongs to rollback only.', {
      issues: [{ path: 'checkpointId', message: `not accepted by ${action}` }],
    });
  }
  // Already applied: the run is in the action's target state (for rollback: paused at that checkpoint).
  const already = action === 'rollback' ? run.status === 'paused' && run.checkpointId === checkpoint!.id : run.status === move.to;
  if (already) return { runId: run.id, action, status: run.status, applied: false };

  // Resuming or rolling back makes the run live (or reopens a failed one): only while the work is open.
  if (action === 'resume' || action === 'rollback') {
    const work = (await workOf(tx, actor.workspaceId, run.taskId))!;
    await assertWorkOpen(tx, work, `${action} the run`, run.id);
  }
  const now = new Date();
  // (A run held for a decision is already paused; any applied action ends that hold.) A rollback
  // waits at its checkpoint, and reopening a failed run forgets how it ended; a resume moves on
  // from the checkpoint it was rolled back to.
  const base: RunRow =
    action === 'rollback'
      ? { ...run, checkpointId: checkpoint!.id, summary: null, finishedAt: null }
      : action === 'resume'
        ? { ...run, checkpointId: null }
        : run;
  const changes = moveRun(base, await taskOf(tx, run), move.to, ACTION_EVENT[action]);
  if (action === 'rollback' || action === 'resume') {
    await tx
      .update(runs)
      .set({ checkpointId: base.checkpointId, summary: base.summary, finishedAt: base.finishedAt })
      .where(eq(runs.id, run.id));
  }
  const cause = { action, reason: input.reason ?? null, ...(checkpoint ? { checkpoint_id: checkpoint.id } : {}) };
  const events = await writeStatusChanges(tx, actor.workspaceId, changes, now, cause);
  if (action === 'cancel') events.push(...(await cancelDecisionsOfRuns(tx, actor.workspaceId, [run.id], now)));
  await appendEvents(tx, actor, events, now);
  return { runId: run.id, action, status: move.to, applied: true };
}
