/**
 * Agent runs of tasks. Decisions name the run they block; run control (POST /runs, actions) builds
 * on this table.
 */
import { sql } from 'drizzle-orm';
import { check, index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns } from './columns';
import { tasks } from './work';

export const runStatuses = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof runStatuses)[number];

export const runs = pgTable(
  'runs',
  {
    ...aggregateColumns(),
    taskId: uuid('task_id')
      .notNull()
      .references(() => tasks.id),
    agentId: text('agent_id'),
    status: text('status', { enum: runStatuses }).notNull(),
    /**
     * The blocking decision this run is paused for (set when such a decision is raised on a
     * running run). Approving that decision carries out its continuation strategy on this run.
     * No foreign key: decisions already reference runs.
     */
    pausedForDecisionId: uuid('paused_for_decision_id'),
  },
  (t) => [
    index('runs_task_idx').on(t.taskId),
    index('runs_workspace_idx').on(t.workspaceId),
    check('runs_status_check', sql`${t.status} in ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')`),
  ],
);
