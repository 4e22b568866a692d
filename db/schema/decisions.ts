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
import type { DecisionPolicy, DecisionRuling, PolicySource } from './decision-policy';

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
  /** The member a delegate ruled for, while they were away. */
  acting_for?: string;
}

/**
 * The action a decision is about (POST /decisions `action`): a tool call, with its arguments and,
 * optionally, the task it acts on at the version the agent saw. Its digest, `sha256:` + hex of
 * SHA-256 over its JCS text, is what a grant names (server/domain/grants/).
 */
export interface DecisionAction {
  tool: string;
  arguments: Record<string, unknown>;
  target?: { type: 'task'; id: string; version: number };
  /**
   * The artifacts the decision names, by digest: added by the service before the action
   * is digested, so approving it approves those exact bytes.
   */
  artifacts?: { id: string; sha256: string }[];
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
    /** The action under decision and its digest, or null for a decision about no one action. */
    action: jsonb('action').$type<DecisionAction>(),
    actionDigest: text('action_digest'),
    /**
     * The version of the action's target task once the decision was raised (after the raising's own
     * change: a blocking decision pauses its run, which the task follows). A grant holds for the
     * task at that version, moved on by the approval's own changes only.
     */
    targetVersion: integer('target_version'),
    /** Whether approving takes the approver's passkey: a WebAuthn assertion over the ruling's statement. */
    requirePasskey: boolean('require_passkey').notNull().default(false),
    /** Whether the approver may change the action's arguments before approving. */
    editable: boolean('editable').notNull().default(false),
    /** How long the grant issued on approval stays usable (with an action only). */
    grantTtlSeconds: integer('grant_ttl_seconds'),
    /** The action as approved (edited or not), once approved. */
    approvedAction: jsonb('approved_action').$type<DecisionAction>(),
    approvedActionDigest: text('approved_action_digest'),
    /** Raised by the MCP gateway for a call of this upstream server's tool (the action's tool is `<server>.<tool>`); null otherwise. */
    gatewayServerId: uuid('gateway_server_id'),
    /** Who raised it: `api_key` or `human`, and that key's or user's id (a human may not rule on their own). */
    createdByType: text('created_by_type', { enum: ['api_key', 'human', 'system'] }).notNull(),
    createdById: text('created_by_id').notNull(),
    /** The artifacts the approver is shown (POST /decisions artifact_ids): what is being approved. */
    artifactIds: uuid('artifact_ids')
      .array()
      .notNull()
      .default(sql`'{}'::uuid[]`),
    /** The policy as resolved when raised, and its digest; null for decisions raised before policies (the default). */
    policy: jsonb('policy').$type<DecisionPolicy>(),
    policyDigest: text('policy_digest'),
    policySource: jsonb('policy_source').$type<PolicySource>(),
    /** The approvals so far, in order; the decision is approved once the last stage's quorum is met. */
    approvals: jsonb('approvals')
      .$type<DecisionRuling[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
    /** How many of the policy's escalation steps have been reached, and when the next one is due (null: none left). */
    escalatedSteps: integer('escalated_steps').notNull().default(0),
    nextEscalationAt: ts('next_escalation_at'),
    /** Declines that did not end the decision (a policy without veto), in order. */
    declines: jsonb('declines')
      .$type<DecisionRuling[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
  },
  (t) => [
    index('decisions_workspace_created_idx').on(t.workspaceId, t.createdAt, t.id),
    // GET /tasks/{id}: the decisions that name a task.
    index('decisions_task_idx').on(t.taskId),
    // The escalation job: pending decisions whose next escalation step is due, soonest first.
    index('decisions_escalation_due_idx')
      .on(t.nextEscalationAt)
      .where(sql`${t.status} = 'pending' and ${t.nextEscalationAt} is not null`),
    index('decisions_pending_due_idx')
      .on(t.dueAt)
      .where(sql`${t.status} = 'pending' and ${t.dueAt} is not null`),
    check('decisions_status_check', sql`${t.status} in ('pending', 'approved', 'declined', 'cancelled', 'expired')`),
    check('decisions_resolution_check', sql`(${t.status} = 'pending') = (${t.resolution} is null)`),
    check(
      'decisions_action_check',
      sql`(${t.action} is null) = (${t.actionDigest} is null) and (${t.action} is null) = (${t.grantTtlSeconds} is null)`,
    ),
  ],
);

/**
 * The grant issued when a decision with an action is approved: a single-use permission to run the
 * approved action (its digest), carried by a JWS the service signs with the workspace's key (the
 * token is signed again when read, to the same bytes: Ed25519 is deterministic, so no token is
 * stored). Consumed once (POST /grants/consume); void when its target changed before it was used.
 */
export const decisionGrants = pgTable(
  'decision_grants',
  {
    ...aggregateColumns(),
    decisionId: uuid('decision_id')
      .notNull()
      .unique()
      .references(() => decisions.id),
    actionDigest: text('action_digest').notNull(),
    /** The task the approved action acts on, at the version it was approved for; null for none. */
    targetId: uuid('target_id'),
    targetVersion: integer('target_version'),
    approverId: text('approver_id').notNull(),
    passkey: boolean('passkey').notNull().default(false),
    /**
     * Whom the grant is for (its token's `azp`): the id of the API key that raised the decision, or
     * `user:<id>` for a person who raised it; null for the system. Only that party sees its token
     * and uses it (server/domain/grants/azp.ts).
     */
    azp: text('azp'),
    /** The workspace grant key (grant_signing_keys.kid) that signs its token. */
    keyId: text('key_id').notNull(),
    issuedAt: ts('issued_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    consumedAt: ts('consumed_at'),
    consumedByType: text('consumed_by_type'),
    consumedById: text('consumed_by_id'),
    voidedAt: ts('voided_at'),
  },
  (t) => [check('decision_grants_target_check', sql`(${t.targetId} is null) = (${t.targetVersion} is null)`)],
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
