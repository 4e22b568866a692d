/**
 * A run's place in the work hierarchy: its task and the nodes above it, whether that work is open
 * for a run to go on, and the task's status change that follows a run's. Run services, node
 * actions and rulings all go through these, so a task shows its current run the same way whoever
 * moved it.
 */
import { and, eq, inArray } from 'drizzle-orm';
import type { Tx } from '@/db';
import { initiatives, milestones, runs, tasks, workstreams } from '@/db/schema';
import { AppError } from '@/server/errors';
import type { RunRow, TaskRow } from '../hierarchy/records';
import type { StatusChange, StatusEventType } from '../status-changes';
import { OPEN_RUN_STATUSES, taskStatusForRun } from './machine';

/** The change that makes `run` show `to`, and the task's change that follows it (if its status differs). */
export function moveRun(
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

/** A task's status change from `task.status` to `to`, outside any lifecycle pause. */
export const taskMove = (
  task: Pick<TaskRow, 'id' | 'status'>,
  to: TaskRow['status'],
  eventType: Extract<StatusEventType, `task.${string}`> = 'task.status_changed',
): StatusChange => ({ level: 'task', id: task.id, from: task.status, to, pauseId: null, resumeStatus: null, eventType });

/** The task's change when its current run moves to `run.status` (none when it already shows it). */
export function followTask(
  task: Pick<TaskRow, 'id' | 'status'>,
  run: { status: RunRow['status']; pausedForDecisionId: string | null },
): StatusChange | null {
  const to = taskStatusForRun(run);
  return to === task.status ? null : taskMove(task, to);
}

/** The run's task, read in the transaction (a run is never without one). */
export async function taskOf(tx: Tx, run: RunRow): Promise<TaskRow> {
  const [task] = await tx.select().from(tasks).where(eq(tasks.id, run.taskId));
  if (!task) throw new Error(`run ${run.id} without its task`);
  return task;
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

/** Whether the task is open, not held by a node-action pause, and every node above it is active. */
export function workIsOpen(work: Work): boolean {
  const { task } = work;
  return work.above.every((a) => a.status === 'active') && task.status !== 'done' && task.status !== 'cancelled' && task.pauseId === null;
}

/**
 * A run may start, resume or be reopened only while its task is open and not held by a node-action
 * pause, every node above is active, and (unless `openRunId` is that run) the task has no other
 * open run. Otherwise 409 invalid_state_transition, naming what stands in the way.
 */
export async function assertWorkOpen(tx: Tx, work: Work, what: string, openRunId: string | null): Promise<void> {
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
