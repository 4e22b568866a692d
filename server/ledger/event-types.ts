/**
 * Every ledger event type, in one registry: the aggregate type each belongs to and its payload.
 * Appending takes a typed event (server/ledger/append.ts NewEvent), the projections have one rule
 * per type (server/projections/state.ts) and the pages one phrase per type (app/_lib/event-words.ts),
 * so a misspelled type, a payload of the wrong shape or a new type without its rule or its words
 * does not compile.
 *
 * A payload that something reads back (the projections) has a zod schema: the replay parses it
 * with that, and its type is what services must write. The ledger replays every payload it was
 * ever given, so a schema accepts each shape its type was ever written in (a field older events
 * lack gets the value the table holds for them); it never refuses a payload the replay could use.
 * A payload nothing reads back has its type alone. Appending parses nothing: the types hold at
 * compile time, and the append is on every write's path.
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
  type DecisionRule,
  type DecisionOption,
  type DecisionResolution,
  type MembershipRole,
} from '@/db/schema';
import {
  checkpointRecordSchema,
  claimRecordSchema,
  initiativeRecordSchema,
  milestoneRecordSchema,
  receiptRecordSchema,
  runRecordSchema,
  taskRecordSchema,
  workstreamRecordSchema,
} from '@/server/domain/hierarchy/records';
import type { LedgerEvent } from './canonical';

/** A type whose payload is read back: parsed with `schema` where it is read. */
interface ReadBack<A extends string, P> {
  readonly aggregate: A;
  readonly schema: z.ZodType<P>;
}

/** A type whose payload nothing reads back: `payload` is its type only, never set. */
interface WriteOnly<A extends string, P> {
  readonly aggregate: A;
  readonly schema: null;
  readonly payload?: P;
}

const readBack = <A extends string, P>(aggregate: A, schema: z.ZodType<P>): ReadBack<A, P> => ({ aggregate, schema });
const writeOnly =
  <P>() =>
  <A extends string>(aggregate: A): WriteOnly<A, P> => ({ aggregate, schema: null });

// ---- payloads read back -----------------------------------------------------------------------

/**
 * A status change of an initiative, workstream, milestone or task
 * (server/domain/status-changes.ts). It also carries `<level>_id` and its cause (the
 * action, a reason, the decision…), which nothing reads back.
 */
const nodeStatusChanged = z.looseObject({
  status: z.string(),
  previous_status: z.string(),
  pause_id: z.string().nullable().default(null),
  resume_status: z.string().nullable().default(null),
});

/**
 * Every run event carries the whole run after it; a status change also its previous status and its
 * cause. (Run events from before runs had an API carried less, but only tests could make a run
 * then, and such a ledger never replayed: its first run event changes a run no event created.)
 */
const runCreated = runRecordSchema.loose();
/** The run as it stands after a heartbeat: its new lease_expires_at (and lease_seconds, if it changed). */
const runLeaseRenewed = runRecordSchema.loose();
const runStatusChanged = runRecordSchema.extend({ previous_status: z.string() }).loose();
const runCheckpointed = runRecordSchema.extend({ checkpoint: checkpointRecordSchema });

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
 * The decision as raised (server/domain/decisions/view.ts decisionView, without history, attention
 * and grant), and the version its target task was left at (`target_version`).
 */
const decisionCreated = z.object({
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
  created_at: z.string(),
  updated_at: z.string(),
});

/** The attention record after the request (server/domain/decisions/view.ts attentionView). */
const attentionRequested = z.object({
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
const decisionResolved = z.object({
  decision_id: z.string(),
  status: z.enum(decisionStatuses),
  resolution: decisionResolution,
  approved_action: decisionAction.optional(),
  approved_action_digest: z.string().optional(),
  /** A passkey-signed approval: the statement and the WebAuthn assertion over it (server/domain/passkeys/ruling.ts). */
  passkey: passkeyProof.optional(),
});

/**
 * One ruling towards a decision's quorum that did not end it by itself: the ruling, and
 * all the decision's rulings of its kind after it. An approval signed with a passkey carries the
 * proof, as decision.approved does.
 */
const approvalRecorded = z.object({
  decision_id: z.string(),
  approval: decisionRuling,
  approvals: z.array(decisionRuling),
  passkey: passkeyProof.optional(),
});
/** Steps of the policy's escalation reached (server/domain/decisions/escalation.ts): whom each told, and how far it has gone. */
const decisionEscalated = z.object({
  decision_id: z.string(),
  step: z.number(),
  after_seconds: z.number(),
  notify: approverSet,
  notified: z.array(z.string()),
  escalated_steps: z.number(),
  next_escalation_at: z.string().nullable(),
});
const declineRecorded = z.object({ decision_id: z.string(), decline: decisionRuling, declines: z.array(decisionRuling) });

/** The grant issued on an approval (server/domain/grants/issue.ts): what its token says, never the token. */
const grantIssued = z.object({
  grant_id: z.string(),
  decision_id: z.string(),
  action_digest: z.string(),
  target: z.object({ type: z.literal('task'), id: z.string(), version: z.number() }).nullable(),
  approver: z.object({ type: z.literal('human'), id: z.string(), passkey: z.boolean() }),
  key_id: z.string(),
  issued_at: z.string(),
  expires_at: z.string(),
});

/**
 * An artifact registered (POST /artifacts): what it is, its digest, size and media type, and where
 * it belongs; never its bytes. The API writes the digest `sha256:<hex>`; the table keeps the hex.
 */
const artifactRegistered = z.object({
  artifact_id: z.string(),
  artifact_type: z.string(),
  title: z.string(),
  media_type: z.string(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  size_bytes: z.number(),
  storage: z.enum(['stored', 'external']),
  uri: z.string().nullable(),
  task_id: z.string().nullable(),
  run_id: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
});

/** An artifact's stored bytes removed: by an owner (DELETE /artifacts/{id}/content) or the workspace's retention. */
const artifactContentRemoved = z.object({
  artifact_id: z.string(),
  digest: z.string(),
  reason: z.enum(['deleted', 'retention']),
  removed_at: z.string(),
});

/** A grant used (POST /grants/consume). */
const grantConsumed = z.object({ grant_id: z.string(), decision_id: z.string(), action_digest: z.string(), consumed_at: z.string() });

/**
 * A grant presented and refused, with why: another action's digest (the grant stays usable), past
 * its expiry, or its target changed (the grant is void from then on).
 */
const grantRefused = z.object({
  grant_id: z.string(),
  decision_id: z.string(),
  reason: z.enum(['grant_mismatch', 'grant_expired', 'approval_stale']),
  action_digest: z.string(),
  presented_digest: z.string(),
  current_version: z.number().nullable(),
});

// ---- payloads nothing reads back ----------------------------------------------------------------

/** Where a webhook URL goes, never the URL itself (server/domain/webhooks/endpoints.ts targetForEvents). */
interface WebhookTarget {
  scheme: string;
  host: string;
  port: number;
  url_digest: string;
}

// ---- the registry ---------------------------------------------------------------------------------

const EVENTS = {
  'workspace.created': writeOnly<{ name: string }>()('workspace'),
  /**
   * A checkpoint signing key for the workspace's ledger (server/ledger/checkpoints.ts): its first,
   * or one that replaces `replaces` (which is retired then). The public half only.
   */
  'ledger.key_added': writeOnly<{
    key_id: string;
    name: string;
    algorithm: 'ed25519';
    public_key: string;
    vkey: string;
    replaces: string | null;
  }>()('workspace'),

  /** The decisions of these urgencies need the approver's passkey (a workspace setting, owners). */
  'workspace.settings_changed': writeOnly<{
    passkey_urgencies: string[];
    previous_passkey_urgencies: string[];
    /** How long stored artifact bytes are kept, in days (null: for ever); absent from events written before artifacts existed. */
    artifact_content_days?: number | null;
    previous_artifact_content_days?: number | null;
  }>()('workspace'),
  /**
   * A person's passkey, in the ledger of each of their workspaces: its public key as DER
   * SubjectPublicKeyInfo (base64), against which the assertions of their signed rulings verify.
   */
  /** PUT /decision-policy: the workspace's rules, whole, as of their new version. */
  'decision_policy.updated': writeOnly<{ version: number; rules: DecisionRule[]; previous_version: number }>()('workspace'),
  'passkey.registered': writeOnly<{
    passkey_id: string;
    user_id: string;
    credential_id: string;
    public_key_spki: string;
    algorithm: number;
    name: string;
  }>()('passkey'),

  /** A person removed one of their passkeys: it signs nothing from then on. */
  'passkey.removed': writeOnly<{ passkey_id: string; user_id: string; credential_id: string }>()('passkey'),

  'membership.created': writeOnly<{ user_id: string; email: string; display_name: string; role: MembershipRole; user_created: boolean }>()(
    'membership',
  ),
  /** A member away until `until`, their rulings going to `delegate_id` (server/domain/workspaces/delegation.ts). */
  'membership.delegation_set': writeOnly<{ user_id: string; delegate_id: string; until: string }>()('membership'),
  'membership.delegation_ended': writeOnly<{ user_id: string; delegate_id: string; until: string }>()('membership'),
  'membership.role_changed': writeOnly<{ user_id: string; email: string; from: MembershipRole; to: MembershipRole }>()('membership'),
  'membership.removed': writeOnly<{ user_id: string; email: string; role: MembershipRole; left: boolean }>()('membership'),

  'invitation.created': writeOnly<{ id: string; email: string; role: MembershipRole; expires_at: string }>()('invitation'),
  'invitation.accepted': writeOnly<{ id: string; email: string; role: MembershipRole; user_id: string }>()('invitation'),
  'invitation.revoked': writeOnly<{ id: string; email: string; reason: string }>()('invitation'),

  'api_key.created': writeOnly<{ id: string; name: string; prefix: string; owner_user_id: string }>()('api_key'),
  /** `reason`: when the key went with its owner's membership or ownership. */
  'api_key.revoked': writeOnly<{ id: string; prefix: string; reason?: 'owner_removed' | 'owner_demoted' }>()('api_key'),

  'webhook_endpoint.created': writeOnly<{ id: string; target: WebhookTarget; event_types: string[]; description: string }>()(
    'webhook_endpoint',
  ),
  /** Only what changed. */
  'webhook_endpoint.updated': writeOnly<{ id: string; target?: WebhookTarget; event_types?: string[]; description?: string }>()(
    'webhook_endpoint',
  ),
  'webhook_endpoint.enabled': writeOnly<{ id: string; resumes_after_sequence: number }>()('webhook_endpoint'),
  /** By a member or an agent; by the system (server/webhooks/dispatcher.ts) with the delivery that kept failing. */
  'webhook_endpoint.disabled': writeOnly<{
    id: string;
    reason: string;
    by: LedgerEvent['actorType'];
    event_id?: string;
    sequence?: number;
    attempts?: number;
    failing_since?: string;
  }>()('webhook_endpoint'),
  'webhook_endpoint.deleted': writeOnly<{ id: string; target: WebhookTarget }>()('webhook_endpoint'),
  'webhook_endpoint.secret_rotated': writeOnly<{ id: string; previous_secret_expires_at: string }>()('webhook_endpoint'),
  'webhook_endpoint.test': writeOnly<{ id: string; message: string }>()('webhook_endpoint'),

  'initiative.created': readBack('initiative', initiativeRecordSchema),
  'initiative.paused': readBack('initiative', nodeStatusChanged),
  'initiative.resumed': readBack('initiative', nodeStatusChanged),
  'initiative.cancelled': readBack('initiative', nodeStatusChanged),
  'initiative.reopened': readBack('initiative', nodeStatusChanged),

  'workstream.created': readBack('workstream', workstreamRecordSchema),
  'workstream.paused': readBack('workstream', nodeStatusChanged),
  'workstream.resumed': readBack('workstream', nodeStatusChanged),
  'workstream.cancelled': readBack('workstream', nodeStatusChanged),
  'workstream.reopened': readBack('workstream', nodeStatusChanged),

  'milestone.created': readBack('milestone', milestoneRecordSchema),
  'milestone.paused': readBack('milestone', nodeStatusChanged),
  'milestone.resumed': readBack('milestone', nodeStatusChanged),
  'milestone.cancelled': readBack('milestone', nodeStatusChanged),
  'milestone.reopened': readBack('milestone', nodeStatusChanged),

  'task.created': readBack('task', taskRecordSchema),
  /** POST /work: a task with its receipt. */
  'work.created': readBack('task', z.object({ task: taskRecordSchema, receipt: receiptRecordSchema })),
  /** PATCH /tasks/{id}: each changed field (by its API name), before and after. */
  'task.updated': readBack(
    'task',
    z.object({ task_id: z.string(), changes: z.record(z.string(), z.object({ before: z.unknown(), after: z.unknown() })) }),
  ),
  'task.paused': readBack('task', nodeStatusChanged),
  'task.resumed': readBack('task', nodeStatusChanged),
  'task.cancelled': readBack('task', nodeStatusChanged),
  /** The task following its current run. */
  'task.status_changed': readBack('task', nodeStatusChanged),
  /** Set back to todo for a new run (a retry, a decision's restart_task). */
  'task.redispatched': readBack('task', nodeStatusChanged),

  'run.created': readBack('run', runCreated),
  'run.started': readBack('run', runStatusChanged),
  'run.paused': readBack('run', runStatusChanged),
  'run.resumed': readBack('run', runStatusChanged),
  'run.cancelled': readBack('run', runStatusChanged),
  'run.rolled_back': readBack('run', runStatusChanged),
  /** Its blocking decision resolved without a continuation: still paused, now on its own. */
  'run.released': readBack('run', runStatusChanged),
  'run.completed': readBack('run', runStatusChanged),
  'run.failed': readBack('run', runStatusChanged),
  /** A heartbeat renewed the run's lease (POST /runs/{runId}/heartbeat): the run with its new lease_expires_at. */
  'run.lease_renewed': readBack('run', runLeaseRenewed),
  /** The run's lease lapsed: the service failed it (failure_reason lease_expired) and its task is ready again. */
  'run.lease_expired': readBack('run', runStatusChanged),
  'run.checkpointed': readBack('run', runCheckpointed),

  /** A receipt document imported whole (POST /agent-work-receipts/import). */
  'receipt.imported': readBack(
    'receipt',
    z.object({
      receipt_id: z.string(),
      document_digest: z.string(),
      imported_at: z.string(),
      document: z.record(z.string(), z.unknown()),
    }),
  ),

  'dedup.claimed': readBack('dedup_claim', z.object({ claim: claimRecordSchema, ttl_seconds: z.number() })),
  'dedup.extended': readBack('dedup_claim', z.object({ claim: claimRecordSchema, ttl_seconds: z.number() })),
  'dedup.released': readBack('dedup_claim', z.object({ claim: claimRecordSchema })),
  /** The retention job removed a claim that had ended (server/domain/dedup/claims.ts pruneEndedClaims). */
  'dedup.pruned': readBack('dedup_claim', z.object({ claim: claimRecordSchema })),

  'decision.created': readBack('decision', decisionCreated),
  'decision.attention_requested': readBack('decision', attentionRequested),
  /** One approval towards the policy's quorum; the last one is followed by decision.approved. */
  'decision.approval_recorded': readBack('decision', approvalRecorded),
  /** A decline under a policy without veto; when the quorum can no longer be met, decision.declined follows. */
  'decision.decline_recorded': readBack('decision', declineRecorded),
  /** A step of the policy's escalation came due while it was pending: the people it names are told and may rule. */
  'decision.escalated': readBack('decision', decisionEscalated),
  'decision.approved': readBack('decision', decisionResolved),
  'decision.declined': readBack('decision', decisionResolved),
  'decision.cancelled': readBack('decision', decisionResolved),
  'decision.expired': readBack('decision', decisionResolved),

  'grant.issued': readBack('grant', grantIssued),
  'grant.consumed': readBack('grant', grantConsumed),
  'grant.refused': readBack('grant', grantRefused),

  'artifact.registered': readBack('artifact', artifactRegistered),
  'artifact.content_removed': readBack('artifact', artifactContentRemoved),
};

// ---- types ------------------------------------------------------------------------------------------

export type EventType = keyof typeof EVENTS;
type Spec<T extends EventType> = (typeof EVENTS)[T];

/** The aggregate type an event of type T belongs to. */
type AggregateOf<T extends EventType> = Spec<T>['aggregate'];

/** What an event of type T carries, as services write it. */
export type PayloadOf<T extends EventType> =
  Spec<T> extends ReadBack<string, infer P> ? P : Spec<T> extends WriteOnly<string, infer P> ? P : never;

/** An event of type T to append. */
interface NewEventOf<T extends EventType> {
  aggregateType: AggregateOf<T>;
  aggregateId: string;
  eventType: T;
  payload: PayloadOf<T>;
  schemaVersion?: number;
}

/** An event to append, of any type: its type decides its aggregate type and its payload. */
export type NewEvent = { [T in EventType]: NewEventOf<T> }[EventType];

/**
 * A stored event of type T, its payload read (readEvent): parsed for the types read back; as stored,
 * unparsed, for the others, which nothing reads.
 */
export type TypedEvent<T extends EventType> = Omit<LedgerEvent, 'eventType' | 'payload'> & {
  eventType: T;
  payload: Spec<T> extends ReadBack<string, infer P> ? P : Record<string, unknown>;
};

// ---- at run time ----------------------------------------------------------------------------------

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENTS, type);
}

/**
 * An event of a type chosen at run time (a status change's type, say), with its aggregate type from
 * the registry. For one type known where it is written, an object literal says the same.
 */
export function newEvent<T extends EventType>(eventType: T, aggregateId: string, payload: PayloadOf<T>): NewEvent {
  // The aggregate type is the registry's for eventType, so the three go together, which TypeScript
  // cannot follow through a T that is itself a union.
  return { aggregateType: EVENTS[eventType].aggregate, aggregateId, eventType, payload } as NewEvent;
}

/**
 * The stored event with its payload read as its type says: parsed with the type's schema, for the
 * types whose payload is read back. A payload its schema refuses fails here, naming the event.
 */
export function readEvent<T extends EventType>(event: LedgerEvent, eventType: T): TypedEvent<T> {
  const { schema } = EVENTS[eventType];
  if (!schema) return { ...event, eventType } as TypedEvent<T>;
  const parsed = schema.safeParse(event.payload);
  if (!parsed.success) {
    throw new Error(`event ${event.sequence} (${eventType}) carries a payload its type does not read: ${z.prettifyError(parsed.error)}`);
  }
  return { ...event, eventType, payload: parsed.data } as TypedEvent<T>;
}
