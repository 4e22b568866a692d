/**
 * What the decisions' events carry (events.ts registers them): the zod schemas the replay parses
 * their payloads with, whose types are what services write. The decision's JSON columns keep
 * some of these whole; those are typed against the columns' types so the two stay one shape.
 */
import { z } from 'zod';
import {
  continuationStrategies,
  decisionShapes,
  decisionStatuses,
  decisionUrgencies,
  timeoutBehaviours,
  type ApproverSet,
  type DecisionAction,
  type DecisionPolicy,
  type DecisionRuling,
  type DecisionOption,
  type DecisionResolution,
} from '@/db/schema';

// The decision's JSON columns keep these whole: typed against the columns' types so the two stay one shape.
const decisionOption: z.ZodType<DecisionOption> = z.object({ id: z.string(), label: z.string(), description: z.string().optional() });
const decisionResolution: z.ZodType<DecisionResolution> = z.object({
  outcome: z.enum(['approved', 'declined', 'cancelled', 'expired']),
  option_ids: z.array(z.string()),
  note: z.string().nullable(),
  resolved_by: z.string(),
  resolved_by_type: z.enum(['human', 'system']),
  resolved_by_name: z.string().nullable(),
  resolved_at: z.string(),
  acting_for: z.string().optional(),
});

/** The action under decision (db/schema/decisions.ts DecisionAction). */
const decisionAction: z.ZodType<DecisionAction> = z.object({
  tool: z.string(),
  // Kept as stored, never rebuilt: z.record would drop a member named `__proto__`, and the digest would change.
  arguments: z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v)),
  target: z.object({ type: z.literal('task'), id: z.string(), version: z.number() }).optional(),
  artifacts: z.array(z.object({ id: z.string(), sha256: z.string() })).optional(),
});

const approverSet: z.ZodType<ApproverSet> = z.object({ roles: z.array(z.enum(['owner', 'approver'])), user_ids: z.array(z.string()) });

/** A decision's policy as resolved when raised (db/schema/decision-policy.ts). */
const decisionPolicySchema: z.ZodType<DecisionPolicy> = z.object({
  veto: z.boolean(),
  stages: z.array(z.object({ name: z.string(), approvals_required: z.number(), approvers: approverSet })),
  escalation: z.array(z.object({ after_seconds: z.number(), notify: approverSet })),
});

const decisionRuling: z.ZodType<DecisionRuling> = z.object({
  approver_id: z.string(),
  name: z.string().nullable(),
  stage: z.string(),
  at: z.string(),
  acting_for: z.string().optional(),
});

/**
 * The decision as raised (view.ts decisionView, without history, attention
 * and grant), and the version its target task was left at (`target_version`).
 */
export const decisionCreated = z.object({
  id: z.string(),
  workspace_id: z.string(),
  title: z.string(),
  description: z.string().nullable().default(null),
  status: z.enum(decisionStatuses),
  shape: z.enum(decisionShapes),
  urgency: z.enum(decisionUrgencies),
  blocks_task: z.boolean(),
  task_id: z.string().nullable().default(null),
  run_id: z.string().nullable().default(null),
  initiative_id: z.string().nullable().default(null),
  workstream_id: z.string().nullable().default(null),
  shape_context: z.object({ options: z.array(decisionOption) }),
  due_at: z.string().nullable(),
  on_timeout: z.enum(timeoutBehaviours),
  resolution: decisionResolution.nullable(),
  action: decisionAction.nullable().default(null),
  action_digest: z.string().nullable().default(null),
  editable: z.boolean().default(false),
  grant_ttl_seconds: z.number().nullable().default(null),
  target_version: z.number().nullable().default(null),
  require_passkey: z.boolean().default(false),
  // Decisions from before artifacts named none; the refs are the artifacts as shown then.
  artifacts: z.array(z.looseObject({ id: z.string() })).default([]),
  // Decisions from before policies had none stored: the default policy, which they show.
  policy: decisionPolicySchema.nullable().default(null),
  policy_digest: z.string().nullable().default(null),
  escalated_steps: z.number().default(0),
  next_escalation_at: z.string().nullable().default(null),
  policy_source: z
    .object({ type: z.enum(['request', 'rule', 'default']), rule_index: z.number().nullable(), rules_version: z.number().nullable() })
    .nullable()
    .default(null),
  created_by: z.object({ type: z.enum(['api_key', 'human', 'system']), id: z.string() }),
  // Raised by the MCP gateway for a call of an upstream server's tool: which server, and the tool's own name.
  gateway: z.object({ server_id: z.string(), server: z.string(), tool: z.string() }).nullable().default(null),
  created_at: z.string(),
  updated_at: z.string(),
});

/** The attention record after the request (view.ts attentionView). */
export const attentionRequested = z.object({
  decision_id: z.string(),
  attention_id: z.string(),
  requested_at: z.string(),
  last_requested_at: z.string(),
  request_count: z.number(),
  recommended_option_id: z.string().nullable().default(null),
  recommendation_note: z.string().nullable().default(null),
  impact_if_delayed: z.string().nullable().default(null),
  continuation: z
    .object({ strategy: z.enum(continuationStrategies) })
    .nullable()
    .default(null),
});

const passkeyProof = z.object({
  credential_id: z.string(),
  statement: z.object({
    decision_id: z.string(),
    outcome: z.literal('approved'),
    option_id: z.string().nullable(),
    option_ids: z.array(z.string()),
    action_digest: z.string().nullable(),
    approver_id: z.string(),
    nonce: z.string(),
    issued_at: z.string(),
  }),
  authenticator_data: z.string(),
  client_data_json: z.string(),
  signature: z.string(),
});

/** A ruling; an approval of a decision with an action also carries the action approved (edited or not). */
export const decisionResolved = z.object({
  decision_id: z.string(),
  status: z.enum(decisionStatuses),
  resolution: decisionResolution,
  approved_action: decisionAction.optional(),
  approved_action_digest: z.string().optional(),
  /** A passkey-signed approval: the statement and the WebAuthn assertion over it (../passkeys/ruling.ts). */
  passkey: passkeyProof.optional(),
});

/**
 * One ruling towards a decision's quorum that did not end it by itself: the ruling, and
 * all the decision's rulings of its kind after it. An approval signed with a passkey carries the
 * proof, as decision.approved does.
 */
export const approvalRecorded = z.object({
  decision_id: z.string(),
  approval: decisionRuling,
  approvals: z.array(decisionRuling),
  passkey: passkeyProof.optional(),
});
/** Steps of the policy's escalation reached (escalation.ts): whom each told, and how far it has gone. */
export const decisionEscalated = z.object({
  decision_id: z.string(),
  step: z.number(),
  after_seconds: z.number(),
  notify: approverSet,
  notified: z.array(z.string()),
  escalated_steps: z.number(),
  next_escalation_at: z.string().nullable(),
});
export const declineRecorded = z.object({ decision_id: z.string(), decline: decisionRuling, declines: z.array(decisionRuling) });
