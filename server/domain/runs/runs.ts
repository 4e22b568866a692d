/**
 * Runs of tasks: start one, record checkpoints, finish it, apply a control action, read it. Every
 * service here takes the workspace's ledger lock first (one lock order with lifecycle actions and
 * rulings), changes the run, lets the task follow, and appends the events in one call.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, max } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { initiatives, milestones, runCheckpoints, runs, tasks, workstreams } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { checkpointRecord, runRecord, type CheckpointRow, type RunRow, type TaskRow } from '../hierarchy/records';
import { runAfter, writeStatusChanges, type StatusChange, type StatusEventType } from '../lifecycle/status-changes';
import { cancelDecisionsOfRuns } from '../decisions/cancel-with-run';
import { OPEN_RUN_STATUSES, RUN_ACTIONS, RUN_REPORTS, taskStatusForRun, verdict, type RunAction } from './machine';

export interface RunView {
  runId: string;
  status: RunRow['status'];
  workspace_id: string;
  task_id: string;
  agent_id: string | null;
  paused_for_decision_id: string | null;
  checkpoint_id: string | null;
  summary: string | null;
  aggregateVersion: number;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  checkpoints: CheckpointView[];
}

export interface CheckpointView {
  checkpointId: string;
  runId: string;
  position: number;
  label: string;
  state: Record<string, unknown> | null;
  created_at: string;
}

const checkpointView = (c: CheckpointRow): CheckpointView => ({
  checkpointId: c.id,
  runId: c.runId,
  position: c.position,
  label: c.label,
  state: c.state,
  created_at: c.createdAt.toISOString(),
});

export function runView(run: RunRow, checkpoints: CheckpointRow[]): RunView {
  return {
    runId: run.id,
    status: run.status,
    workspace_id: run.workspaceId,
    task_id: run.taskId,
    agent_id: run.agentId,
    paused_for_decision_id: run.pausedForDecisionId,
    checkpoint_id: run.checkpointId,
    summary: run.summary,
    aggregateVersion: run.version,
    created_at: run.createdAt.toISOString(),
    updated_at: run.updatedAt.toISOString(),
    finished_at: run.finishedAt?.toISOString() ?? null,
    checkpoints: checkpoints.map(checkpointView),
  };
}

async function findRun(db: Executor, workspaceId: string, runId: string): Promise<RunRow | undefined> {
  const [run] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.workspaceId, workspaceId)));
  return run;
}

export async function loadRunView(db: Executor, workspaceId: string, runId: string): Promise<RunView | undefined> {
  const run = await findRun(db, workspaceId, runId);
  if (!run) return undefined;
  const checkpoints = await db.select().from(runCheckpoints).where(eq(runCheckpoints.runId, runId)).orderBy(asc(runCheckpoints.position));
  return runView(run, checkpoints);
}

const notFound = () => new AppError('not_found', 'No such run in your workspace.');

function refuse(run: RunRow, what: string): AppError {
  return new AppError('invalid_state_transition', `Cannot ${what} a run that is ${run.status}.`, { status: run.status, runId: run.id });
}

/** The change that makes `run` show `to`, and the task's change that follows it (if its status differs). */
function moveRun(
  run: RunRow,
  task: Pick<TaskRow, 'id' | 'status'>,
  to: RunRow['status'],
  eventType: StatusEventType,
  pausedForDecisionId: string | null = null,
): StatusChange[] {
  const changes: StatusChange[] = [
    { level: 'run', id: run.id, from: run.status, to, pauseId: null, resumeStatus: null, eventType, run, pausedForDecisionId },
  ];
  const follows = followTask(task, { status: to, pausedForDecisionId });
  if (follows) changes.push(follows);
  return changes;
}

/** The task's change when its current run moves to `run.status` (none when it already shows it). */
export function followTask(
  task: Pick<TaskRow, 'id' | 'status'>,
  run: { status: RunRow['status']; pausedForDecisionId: string | null },
): StatusChange | null {
  const to = taskStatusForRun(run);
  if (to === task.status) return null;
  return { level: 'task', id: task.id, from: task.status, to, pauseId: null, resumeStatus: null, eventType: 'task.status_changed' };
}

async function taskOf(tx: Tx, run: RunRow): Promise<TaskRow> {
  const [task] = await tx.select().from(tasks).where(eq(tasks.id, run.taskId));
  if (!task) throw new Error(`run ${run.id} without its task`);
  return task;
}

async function locked(tx: Tx, actor: Actor, runId: string): Promise<RunRow> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const run = await findRun(tx, actor.workspaceId, runId);
  if (!run) throw notFound();
  return run;
}

// ---- start -----------------------------------------------------------------------------------

/** A new run's row (`running` when an agent starts it, `queued` when the service re-dispatches its task). */
export function newRun(opts: {
  workspaceId: string;
  taskId: string;
  agentId: string | null;
  status: 'running' | 'queued';
  at: Date;
}): RunRow {
  return {
    id: randomUUID(),
    workspaceId: opts.workspaceId,
    taskId: opts.taskId,
    agentId: opts.agentId,
    status: opts.status,
    pausedForDecisionId: null,
    pauseId: null,
    resumeStatus: null,
    checkpointId: null,
    summary: null,
    finishedAt: null,
    version: 1,
    createdAt: opts.at,
    updatedAt: opts.at,
  };
}

export interface Work {
  task: TaskRow;
  above: { level: 'initiative' | 'workstream' | 'milestone'; status: string }[];
}

/** A task with the statuses of the nodes above it. */
export async function workOf(tx: Tx, workspaceId: string, taskId: string): Promise<Work | undefined> {
  const [row] = await tx
    .select({ task: tasks, initiative: initiatives.status, workstream: workstreams.status, milestone: milestones.status })
    .from(tasks)
    .innerJoin(initiatives, eq(initiatives.id, tasks.initiativeId))
    .innerJoin(workstreams, eq(workstreams.id, tasks.workstreamId))
    .innerJoin(milestones, eq(milestones.id, tasks.milestoneId))
    .where(and(eq(tasks.id, taskId), eq(tasks.workspaceId, workspaceId)));
  if (!row) return undefined;
  return {
    task: row.task,
    above: [
      { level: 'milestone', status: row.milestone },
      { level: 'workstream', status: row.workstream },
      { level: 'initiative', status: row.initiative },
    ],
  };
}

/** Whether the task is open, not held by a lifecycle pause, and every node above it is active. */
export function workIsOpen(work: Work): boolean {
  const { task } = work;
  return work.above.every((a) => a.status === 'active') && task.status !== 'done' && task.status !== 'cancelled' && task.pauseId === null;
}

/**
 * A run may start, resume or be reopened only while its task is open and not held by a lifecycle
 * pause, every node above is active, and (unless `openRunId` is that run) the task has no other
 * open run. Otherwise 409 invalid_state_transition, naming what stands in the way.
 */
async function assertWorkOpen(tx: Tx, work: Work, what: string, openRunId: string | null): Promise<void> {
  for (const { level, status } of work.above) {
    if (status !== 'active') {
      throw new AppError('invalid_state_transition', `Cannot ${what}: the task's ${level} is ${status}.`, { status, level });
    }
  }
  const { task } = work;
  if (task.status === 'done' || task.status === 'cancelled' || task.pauseId !== null) {
    const why = task.pauseId !== null ? 'paused by a lifecycle action (resume it with POST /lifecycle)' : task.status;
    throw new AppError('invalid_state_transition', `Cannot ${what}: the task is ${why}.`, { status: task.status, level: 'task' });
  }
  const open = await tx
    .select({ id: runs.id, status: runs.status })
    .from(runs)
    .where(and(eq(runs.taskId, task.id), inArray(runs.status, [...OPEN_RUN_STATUSES])));
  const other = open.find((r) => r.id !== openRunId);
  if (other) {
    throw new AppError('invalid_state_transition', `Cannot ${what}: the task already has an open run (${other.status}).`, {
      status: other.status,
      runId: other.id,
    });
  }
}

export interface CreateRunInput {
  task_id: string;
  agent_id?: string;
}

/**
 * Starts a run of a task (status `running`; the task becomes `in_progress`). A task takes one open
 * run at a time, and only while it and the nodes above it are active.
 */
export async function createRun(tx: Tx, actor: Actor, input: CreateRunInput): Promise<RunView> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const work = await workOf(tx, actor.workspaceId, input.task_id);
  if (!work) throw new AppError('not_found', 'No task with that id in your workspace.', { fields: ['task_id'] });
  await assertWorkOpen(tx, work, 'start a run', null);
  const { task } = work;
  const now = new Date();
  const run = newRun({
    workspaceId: actor.workspaceId,
    taskId: task.id,
    agentId: input.agent_id ?? task.agentId,
    status: 'running',
    at: now,
  });
  await tx.insert(runs).values(run);
  const follows = followTask(task, run);
  const events: NewEvent[] = [{ aggregateType: 'run', aggregateId: run.id, eventType: 'run.created', payload: { ...runRecord(run) } }];
  if (follows) events.push(...(await writeStatusChanges(tx, actor.workspaceId, [follows], now, { run_id: run.id })));
  await appendEvents(tx, actor, events, now);
  return runView(run, []);
}

// ---- checkpoints -----------------------------------------------------------------------------

export interface CheckpointInput {
  label: string;
  state?: Record<string, unknown>;
}

/** Records a checkpoint of a running run (the first checkpoint of a queued run starts it). */
export async function addCheckpoint(tx: Tx, actor: Actor, runId: string, input: CheckpointInput): Promise<CheckpointView> {
  const run = await locked(tx, actor, runId);
  const now = new Date();
  const events: NewEvent[] = [];
  let current = run;
  if (run.status === 'queued') {
    const changes = moveRun(run, await taskOf(tx, run), RUN_REPORTS.start.to, 'run.started');
    events.push(...(await writeStatusChanges(tx, actor.workspaceId, changes, now, { reason: 'first checkpoint' })));
    current = runAfter(changes[0]!, now);
  } else if (run.status !== 'running') {
    throw refuse(run, 'record a checkpoint of');
  }
  const [last] = await tx
    .select({ position: max(runCheckpoints.position) })
    .from(runCheckpoints)
    .where(eq(runCheckpoints.runId, run.id));
  const checkpoint: CheckpointRow = {
    id: randomUUID(),
    workspaceId: actor.workspaceId,
    runId: run.id,
    position: (last?.position ?? 0) + 1,
    label: input.label,
    state: input.state ?? null,
    createdAt: now,
  };
  await tx.insert(runCheckpoints).values(checkpoint);
  events.push({
    aggregateType: 'run',
    aggregateId: run.id,
    eventType: 'run.checkpointed',
    payload: { ...runRecord({ ...current, version: current.version + 1, updatedAt: now }), checkpoint: checkpointRecord(checkpoint) },
  });
  // The checkpoint is an event of the run's aggregate, so the run's version moves with it.
  await tx
    .update(runs)
    .set({ version: current.version + 1, updatedAt: now })
    .where(eq(runs.id, run.id));
  await appendEvents(tx, actor, events, now);
  return checkpointView(checkpoint);
}

// ---- finish ----------------------------------------------------------------------------------

export interface FinishInput {
  outcome: 'completed' | 'failed';
  summary?: string;
}

/** The agent's report that the run ended; the task becomes `done` or `failed`. Repeating it is a no-op. */
export async function finishRun(tx: Tx, actor: Actor, runId: string, input: FinishInput): Promise<RunView> {
  const run = await locked(tx, actor, runId);
  const move = input.outcome === 'completed' ? RUN_REPORTS.complete : RUN_REPORTS.fail;
  const v = verdict(move, run.status);
  if (v === 'refuse') throw refuse(run, input.outcome === 'completed' ? 'complete' : 'fail');
  if (v === 'apply') {
    const now = new Date();
    const ended: RunRow = { ...run, summary: input.summary ?? null, finishedAt: now };
    await tx.update(runs).set({ summary: ended.summary, finishedAt: now }).where(eq(runs.id, run.id));
    const changes = moveRun(ended, await taskOf(tx, run), move.to, `run.${input.outcome}`);
    await appendEvents(tx, actor, await writeStatusChanges(tx, actor.workspaceId, changes, now, {}), now);
  }
  return (await loadRunView(tx, actor.workspaceId, runId))!;
}

// ---- control actions -------------------------------------------------------------------------

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
