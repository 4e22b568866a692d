/**
 * Agent runs of tasks and their checkpoints. A run's status follows the state machine in
 * server/domain/runs/machine.ts; the task's status follows its runs. Decisions name the run they
 * block; lifecycle actions pause, resume and cancel runs with the nodes above them.
 */
import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns, ts } from './columns';
import { tasks } from './work';
import { workspaces } from './workspaces';

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
    /** The lifecycle pause that paused this run, and the status its resume restores (see lifecycle). */
    pauseId: uuid('pause_id'),
    resumeStatus: text('resume_status', { enum: runStatuses }),
    /** The checkpoint the run was last rolled back to: it resumes from there. */
    checkpointId: uuid('checkpoint_id'),
    /** What the agent reported when it finished. */
    summary: text('summary'),
    finishedAt: ts('finished_at'),
    /**
     * The run's place among its task's runs (1, 2, …): a fencing token that only grows, so a
     * write carrying an older run's fence can be told from the current holder's.
     */
    fence: integer('fence').notNull(),
    /** How long a heartbeat (or a checkpoint) keeps the run's lease (server/domain/runs/lease.ts). */
    leaseSeconds: integer('lease_seconds').notNull().default(300),
    /** When the lease lapses unless renewed; set only while the run is `running` (a paused run holds no lease). */
    leaseExpiresAt: ts('lease_expires_at'),
    /** Why the service failed the run: `lease_expired` (null when its agent reported the failure, or it did not fail). */
    failureReason: text('failure_reason', { enum: ['lease_expired'] }),
    /** The artifacts its agent named when it finished (POST /runs/{runId}/finish artifact_ids): what it delivered. */
    artifactIds: uuid('artifact_ids')
      .array()
      .notNull()
      .default(sql`'{}'::uuid[]`),
  },
  (t) => [
    // A task's runs by fence; two runs of one task never share a fence.
    uniqueIndex('runs_task_fence_idx').on(t.taskId, t.fence),
    // The lease-expiry job reads the leases that lapsed, soonest first, off this (running runs only).
    index('runs_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.leaseExpiresAt} is not null`),
    // GET /runs pages newest first.
    index('runs_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
    check('runs_status_check', sql`${t.status} in ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')`),
    check('runs_lease_seconds_check', sql`${t.leaseSeconds} between 5 and 3600`),
    check('runs_failure_reason_check', sql`${t.failureReason} is null or ${t.failureReason} = 'lease_expired'`),
  ],
);

/** Points a run can be rolled back to, numbered from 1 within the run. */
export const runCheckpoints = pgTable(
  'run_checkpoints',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    runId: uuid('run_id')
      .notNull()
      .references(() => runs.id),
    position: integer('position').notNull(),
    label: text('label').notNull(),
    state: jsonb('state').$type<Record<string, unknown> | null>(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('run_checkpoints_run_position_idx').on(t.runId, t.position)],
);

/**
 * Duplicate-trigger claims: one row per fingerprint in a workspace. The row stays after expiry or
 * release; a later claim takes it over with a conditional UPDATE (see server/domain/dedup/claims.ts).
 */
export const dedupClaims = pgTable(
  'dedup_claims',
  {
    /** UUIDv5 of workspace and fingerprint: the aggregate id of the claim's ledger events. */
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    fingerprintHash: text('fingerprint_hash').notNull(),
    source: text('source').notNull(),
    eventKey: text('event_key').notNull(),
    initiativeId: uuid('initiative_id'),
    activeRunId: uuid('active_run_id').notNull(),
    claimedAt: ts('claimed_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    releasedAt: ts('released_at'),
    version: integer('version').notNull().default(1),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('dedup_claims_fingerprint_idx').on(t.workspaceId, t.fingerprintHash),
    // When a claim ended: its release, else its expiry (a claim is released only before it expires).
    // The retention job (server/retention.ts) prunes ended claims by it.
    index('dedup_claims_ended_idx').on(sql`coalesce(${t.releasedAt}, ${t.expiresAt})`),
  ],
);
