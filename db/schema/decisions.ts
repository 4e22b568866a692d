/**
 * Decisions raised for a human ruling, and the attention record an agent refreshes on one.
 * A decision's history is not stored here: it is the decision's own events in the ledger.
 */
import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns, ts } from './columns';
import { runs } from './runs';
import { initiatives, tasks, workstreams } from './work';
import { workspaces } from './workspaces';

export const decisionShapes = [
  'generic',
  'artifact_review',
  'icp_confirm',
  'budget_approval',
  'handoff_route',
  'plan_adjust',
  'task_restart',
  'escalation',
  'option_select',
  'option_multiselect',
] as const;
export const decisionUrgencies = ['deferred', 'standard', 'urgent', 'critical'] as const;
export const decisionStatuses = ['pending', 'approved', 'declined', 'cancelled', 'expired'] as const;
export const timeoutBehaviours = ['expire', 'decline'] as const;
export const continuationStrategies = ['resume_session', 'restart_task', 'manual'] as const;

export type DecisionShape = (typeof decisionShapes)[number];
export type DecisionUrgency = (typeof decisionUrgencies)[number];
export type DecisionStatus = (typeof decisionStatuses)[number];

export interface DecisionOption {
  id: string;
  label: string;
  description?: string;
}

export interface DecisionResolution {
  outcome: 'approved' | 'declined' | 'cancelled' | 'expired';
  option_ids: string[];
  note: string | null;
  /** The user's id, or `system`. */
  resolved_by: string;
  resolved_by_type: 'human' | 'system';
  resolved_by_name: string | null;
  resolved_at: string;
}

export const decisions = pgTable(
  'decisions',
  {
    ...aggregateColumns(),
    title: text('title').notNull(),
    description: text('description'),
    shape: text('shape', { enum: decisionShapes }).notNull(),
    urgency: text('urgency', { enum: decisionUrgencies }).notNull(),
    status: text('status', { enum: decisionStatuses }).notNull().default('pending'),
    blocksTask: boolean('blocks_task').notNull().default(false),
    taskId: uuid('task_id').references(() => tasks.id),
    runId: uuid('run_id').references(() => runs.id),
    initiativeId: uuid('initiative_id').references(() => initiatives.id),
    workstreamId: uuid('workstream_id').references(() => workstreams.id),
    options: jsonb('options').$type<DecisionOption[]>().notNull(),
    dueAt: ts('due_at'),
    onTimeout: text('on_timeout', { enum: timeoutBehaviours }).notNull().default('expire'),
    resolution: jsonb('resolution').$type<DecisionResolution>(),
    /** Who raised it: `api_key` or `human`, and that key's or user's id (a human may not rule on their own). */
    createdByType: text('created_by_type', { enum: ['api_key', 'human', 'system'] }).notNull(),
    createdById: text('created_by_id').notNull(),
  },
  (t) => [
    index('decisions_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
    // GET /tasks/{id}: the decisions that name a task.
    index('decisions_task_idx').on(t.taskId),
    index('decisions_pending_due_idx')
      .on(t.dueAt)
      .where(sql`${t.status} = 'pending' and ${t.dueAt} is not null`),
    check('decisions_status_check', sql`${t.status} in ('pending', 'approved', 'declined', 'cancelled', 'expired')`),
    check('decisions_resolution_check', sql`(${t.status} = 'pending') = (${t.resolution} is null)`),
  ],
);

export const decisionAttention = pgTable('decision_attention', {
  decisionId: uuid('decision_id')
    .primaryKey()
    .references(() => decisions.id),
  workspaceId: uuid('workspace_id')
    .notNull()
    .references(() => workspaces.id),
  attentionId: uuid('attention_id').notNull().unique(),
  requestedAt: ts('requested_at').notNull(),
  lastRequestedAt: ts('last_requested_at').notNull(),
  requestCount: integer('request_count').notNull(),
  recommendedOptionId: text('recommended_option_id'),
  recommendationNote: text('recommendation_note'),
  impactIfDelayed: text('impact_if_delayed'),
  continuationStrategy: text('continuation_strategy', { enum: continuationStrategies }),
});
