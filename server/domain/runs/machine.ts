/**
 * The run state machine, written once. Control actions (POST /runs/{runId}/actions/{action}) and
 * the agent's own reports (its first checkpoint starts a queued run; finish completes or fails it)
 * are each a set of states they apply from and the state they lead to. The diagram in docs/agents.md is
 * this table.
 */
import type { RunStatus } from '@/db/schema';
import type { TaskStatus } from '@/db/schema';

interface Move {
  from: readonly RunStatus[];
  to: RunStatus;
}

export const RUN_ACTIONS = {
  pause: { from: ['queued', 'running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  cancel: { from: ['queued', 'running', 'paused'], to: 'cancelled' },
  /** Back to a checkpoint of the run; it waits there (paused) until resumed. */
  rollback: { from: ['running', 'paused', 'failed'], to: 'paused' },
} as const satisfies Record<string, Move>;

export type RunAction = keyof typeof RUN_ACTIONS;
export const RUN_ACTION_NAMES = Object.keys(RUN_ACTIONS) as [RunAction, ...RunAction[]];

export const RUN_REPORTS = {
  start: { from: ['queued'], to: 'running' },
  complete: { from: ['running'], to: 'completed' },
  fail: { from: ['running'], to: 'failed' },
} as const satisfies Record<string, Move>;

export type Verdict = 'apply' | 'already' | 'refuse';

/**
 * What an action does to a run in `status`: apply it, nothing (it is already applied: the run is in
 * the action's target state, and for rollback at that checkpoint), or refuse it.
 */
export function verdict(move: Move, status: RunStatus, already = status === move.to): Verdict {
  if (already) return 'already';
  return (move.from as readonly RunStatus[]).includes(status) ? 'apply' : 'refuse';
}

/** Open runs can still change; the others are finished. */
export const OPEN_RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'paused'];

/**
 * The status a task shows for its current run: the task's status follows its runs. A run paused
 * for a blocking decision blocks its task; a cancelled run leaves the task to do again.
 */
export function taskStatusForRun(run: { status: RunStatus; pausedForDecisionId: string | null }): TaskStatus {
  switch (run.status) {
    case 'queued':
      return 'todo';
    case 'running':
      return 'in_progress';
    case 'paused':
      return run.pausedForDecisionId ? 'blocked' : 'paused';
    case 'completed':
      return 'done';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'todo';
  }
}
