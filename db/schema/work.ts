/**
 * The work hierarchy: initiative → workstream → milestone → task, and the receipts kept for tasks.
 * These tables are projections of ledger events; `version` mirrors the aggregate's last aggregateVersion.
 */
import { sql, type SQLWrapper } from 'drizzle-orm';
import { boolean, check, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns, ts } from './columns';
import { workspaces } from './workspaces';

export const nodeStatuses = ['active', 'paused', 'completed', 'cancelled'] as const;
export const taskStatuses = ['todo', 'in_progress', 'blocked', 'paused', 'done', 'failed', 'cancelled'] as const;
export const taskPriorities = ['low', 'medium', 'high', 'urgent'] as const;
export const taskTypes = ['research', 'build', 'review', 'ops', 'decision'] as const;

/**
 * Lifecycle pause bookkeeping: the pause that paused this node (its own, or one cascading from an
 * ancestor) and the status to restore. Resume restores exactly the nodes carrying its pause id, so
 * nodes paused on their own before stay paused.
 */
const pauseColumns = <S extends readonly [string, ...string[]]>(statuses: S) => ({
  pauseId: uuid('pause_id'),
  resumeStatus: text('resume_status', { enum: statuses }),
});

export type TaskPriority = (typeof taskPriorities)[number];

/**
 * Where a priority sorts: urgent 0, high 1, medium 2, low 3. The same expression in the indexes
 * and in GET /tasks?sort=priority, so the planner serves that order from an index.
 */
export const taskPriorityRank = (column: SQLWrapper) =>
  sql`(case ${column} when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 else 3 end)`;
export type TaskStatus = (typeof taskStatuses)[number];

export const initiatives = pgTable(
  'initiatives',
  {
    ...aggregateColumns(),
    title: text('title').notNull(),
    summary: text('summary').notNull().default(''),
    status: text('status', { enum: nodeStatuses }).notNull().default('active'),
    ...pauseColumns(nodeStatuses),
    visibility: text('visibility', { enum: ['private', 'workspace'] })
      .notNull()
      .default('workspace'),
    modelTier: text('model_tier', { enum: ['economy', 'standard', 'premium'] })
      .notNull()
      .default('standard'),
    executionPolicy: jsonb('execution_policy')
      .$type<{ mode: 'sequential' | 'parallel' | 'manual'; max_concurrent_agents: number }>()
      .notNull(),
    /** The workspace's Inbox: where work without explicit placement lands. */
    isInbox: boolean('is_inbox').notNull().default(false),
  },
  (t) => [
    // GET /initiatives pages by creation, oldest first.
    index('initiatives_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
    check('initiatives_status_check', sql`${t.status} in ('active', 'paused', 'completed', 'cancelled')`),
  ],
);

export const workstreams = pgTable(
  'workstreams',
  {
    ...aggregateColumns(),
    /** Order among siblings created together (a tree is created in one instant). */
    position: integer('position').notNull().default(0),
    initiativeId: uuid('initiative_id')
      .notNull()
      .references(() => initiatives.id),
    name: text('name').notNull(),
    goal: text('goal').notNull().default(''),
    status: text('status', { enum: nodeStatuses }).notNull().default('active'),
    ...pauseColumns(nodeStatuses),
    domain: text('domain').notNull().default('general'),
    agentId: text('agent_id'),
    /** Sibling workstreams this one waits for (ids, in the order given). */
    dependsOn: uuid('depends_on')
      .array()
      .notNull()
      .default(sql`'{}'::uuid[]`),
  },
  (t) => [
    index('workstreams_initiative_idx').on(t.initiativeId),
    check('workstreams_status_check', sql`${t.status} in ('active', 'paused', 'completed', 'cancelled')`),
  ],
);

export const milestones = pgTable(
  'milestones',
  {
    ...aggregateColumns(),
    /** Order among siblings created together (a tree is created in one instant). */
    position: integer('position').notNull().default(0),
    workstreamId: uuid('workstream_id')
      .notNull()
      .references(() => workstreams.id),
    title: text('title').notNull(),
    status: text('status', { enum: nodeStatuses }).notNull().default('active'),
    ...pauseColumns(nodeStatuses),
  },
  (t) => [
    index('milestones_workstream_idx').on(t.workstreamId),
    check('milestones_status_check', sql`${t.status} in ('active', 'paused', 'completed', 'cancelled')`),
  ],
);

export const tasks = pgTable(
  'tasks',
  {
    ...aggregateColumns(),
    /** Order among siblings created together (a tree is created in one instant). */
    position: integer('position').notNull().default(0),
    initiativeId: uuid('initiative_id')
      .notNull()
      .references(() => initiatives.id),
    workstreamId: uuid('workstream_id')
      .notNull()
      .references(() => workstreams.id),
    milestoneId: uuid('milestone_id')
      .notNull()
      .references(() => milestones.id),
    title: text('title').notNull(),
    description: text('description'),
    priority: text('priority', { enum: taskPriorities }).notNull().default('medium'),
    type: text('type', { enum: taskTypes }).notNull().default('build'),
    estimateHours: doublePrecision('estimate_hours'),
    status: text('status', { enum: taskStatuses }).notNull().default('todo'),
    ...pauseColumns(taskStatuses),
    agentId: text('agent_id'),
    /** Sibling tasks (same milestone) this one waits for (ids, in the order given). */
    dependsOn: uuid('depends_on')
      .array()
      .notNull()
      .default(sql`'{}'::uuid[]`),
  },
  (t) => [
    index('tasks_milestone_idx').on(t.milestoneId),
    index('tasks_initiative_idx').on(t.initiativeId),
    // GET /tasks?sort=priority, and the work queue (?status=todo, ?ready=true) read in that order
    // straight off the index; ?sort=updated (newest first) reads tasks_updated_idx backwards.
    index('tasks_queue_idx').on(t.workspaceId, t.status, taskPriorityRank(t.priority), t.createdAt, t.id),
    index('tasks_priority_idx').on(t.workspaceId, taskPriorityRank(t.priority), t.createdAt, t.id),
    index('tasks_updated_idx').on(t.workspaceId, t.updatedAt, t.id),
    check('tasks_status_check', sql`${t.status} in ('todo', 'in_progress', 'blocked', 'paused', 'done', 'failed', 'cancelled')`),
    check('tasks_priority_check', sql`${t.priority} in ('low', 'medium', 'high', 'urgent')`),
    check('tasks_estimate_check', sql`${t.estimateHours} is null or ${t.estimateHours} >= 0`),
  ],
);

export const receipts = pgTable(
  'receipts',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    taskId: uuid('task_id')
      .notNull()
      .references(() => tasks.id),
    status: text('status').notNull(),
    summary: text('summary').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('receipts_task_idx').on(t.taskId), index('receipts_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id)],
);

/**
 * Receipts imported from elsewhere (POST /agent-work-receipts/import): the validated document as
 * sent, kept whole so its export is byte-for-byte the same JSON value, with its digest.
 */
export const importedReceipts = pgTable(
  'imported_receipts',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    receiptId: uuid('receipt_id').notNull(),
    document: jsonb('document').$type<Record<string, unknown>>().notNull(),
    /** sha256: + hex of the RFC 8785 form of the document. */
    documentDigest: text('document_digest').notNull(),
    importedAt: ts('imported_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.receiptId] })],
);
