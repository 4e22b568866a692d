/**
 * Agent runs of tasks. Decisions name the run they block; run control (POST /runs, actions) builds
 * on this table.
 */
import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { tasks } from './work';
import { workspaces } from './workspaces';

export const runStatuses = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof runStatuses)[number];

export const runs = pgTable(
  'runs',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    taskId: uuid('task_id')
      .notNull()
      .references(() => tasks.id),
    agentId: text('agent_id'),
    status: text('status', { enum: runStatuses }).notNull(),
    version: integer('version').notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('runs_task_idx').on(t.taskId),
    index('runs_workspace_idx').on(t.workspaceId),
    check('runs_status_check', sql`${t.status} in ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')`),
  ],
);
