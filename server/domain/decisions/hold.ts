/**
 * A blocking decision holds its run paused (and its task `blocked`) until the ruling. When the
 * decision resolves without carrying out a continuation (declined, cancelled, expired, approved
 * with `manual` or none, or approved while the work above is paused), the hold ends: the run stays
 * paused, now on its own (the agent resumes it with the run action), and its task shows `paused`.
 */
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { runs, tasks } from '@/db/schema';
import type { NewEvent } from '@/server/ledger/append';
import { writeStatusChanges, type StatusChange } from '../status-changes';

/** Ends the hold of `decisionId` on its run, if it still has one; returns the events to append. */
export async function releaseHold(tx: Tx, workspaceId: string, decisionId: string, now: Date): Promise<NewEvent[]> {
  const [found] = await tx
    .select({ run: runs, task: tasks })
    .from(runs)
    .innerJoin(tasks, eq(tasks.id, runs.taskId))
    .where(and(eq(runs.workspaceId, workspaceId), eq(runs.pausedForDecisionId, decisionId), eq(runs.status, 'paused')));
  if (!found) return [];
  const { run, task } = found;
  const changes: StatusChange[] = [
    {
      level: 'run',
      id: run.id,
      from: run.status,
      to: 'paused',
      pauseId: run.pauseId,
      resumeStatus: run.resumeStatus,
      eventType: 'run.released',
      run,
      pausedForDecisionId: null,
    },
  ];
  if (task.pauseId === null && task.status === 'blocked') {
    changes.push({
      level: 'task',
      id: task.id,
      from: 'blocked',
      to: 'paused',
      pauseId: null,
      resumeStatus: null,
      eventType: 'task.status_changed',
    });
  } else if (task.pauseId !== null && task.resumeStatus === 'blocked') {
    // Paused by a node action meanwhile: its resume will bring it back paused, not blocked.
    changes.push({
      level: 'task',
      id: task.id,
      from: task.status,
      to: task.status,
      pauseId: task.pauseId,
      resumeStatus: 'paused',
      eventType: 'task.status_changed',
    });
  }
  return writeStatusChanges(tx, workspaceId, changes, now, {
    decision_id: decisionId,
    reason: 'the decision resolved without a continuation',
  });
}
