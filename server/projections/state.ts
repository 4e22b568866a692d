/**
 * The projection tables as one in-memory state, built either by replaying the ledger (`fold`) or by
 * reading the tables (`loadFromTables`). The two must always agree: that is what "the tables are
 * projections of the ledger" means, and the test suite checks it. The operating map is computed
 * from the folded state, and `projections:rebuild` writes it back into emptied tables.
 */
import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import {
  artifacts,
  decisionAttention,
  decisionGrants,
  decisions,
  dedupClaims,
  importedReceipts,
  runCheckpoints,
  initiatives,
  ledgerEvents,
  milestones,
  receipts,
  runs,
  tasks,
  workstreams,
} from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { isEventType, readEvent, type EventType, type TypedEvent } from '@/server/ledger/event-types';
import {
  checkpointRow,
  claimRow,
  runRow,
  initiativeRow,
  milestoneRow,
  receiptRow,
  taskRow,
  workstreamRow,
  type InitiativeRow,
  type MilestoneRow,
  type ReceiptRow,
  type TaskRow,
  type WorkstreamRow,
  type RunRow,
  type CheckpointRow,
  type ClaimRow,
} from '@/server/domain/hierarchy/records';
import type { AttentionRow, DecisionRow } from '@/server/domain/decisions/view';
import type { GrantRow } from '@/server/domain/grants/token';
import type { StatusEventType } from '@/server/domain/status-changes';

type ImportedRow = typeof importedReceipts.$inferSelect;
type ArtifactRow = typeof artifacts.$inferSelect;

export interface ProjectionState {
  initiatives: Map<string, InitiativeRow>;
  workstreams: Map<string, WorkstreamRow>;
  milestones: Map<string, MilestoneRow>;
  tasks: Map<string, TaskRow>;
  receipts: Map<string, ReceiptRow>;
  runs: Map<string, RunRow>;
  checkpoints: Map<string, CheckpointRow>;
  claims: Map<string, ClaimRow>;
  imported: Map<string, ImportedRow>;
  decisions: Map<string, DecisionRow>;
  attention: Map<string, AttentionRow>;
  grants: Map<string, GrantRow>;
  artifacts: Map<string, ArtifactRow>;
  /** The event that created each receipt: evidence carries its id and hash. */
  receiptEvents: Map<string, { eventId: string; eventHash: string; sequence: number }>;
}

export function emptyState(): ProjectionState {
  return {
    initiatives: new Map(),
    workstreams: new Map(),
    milestones: new Map(),
    tasks: new Map(),
    receipts: new Map(),
    runs: new Map(),
    checkpoints: new Map(),
    claims: new Map(),
    imported: new Map(),
    decisions: new Map(),
    attention: new Map(),
    grants: new Map(),
    artifacts: new Map(),
    receiptEvents: new Map(),
  };
}

function must<T>(row: T | undefined, event: Pick<LedgerEvent, 'sequence' | 'eventType' | 'aggregateType' | 'aggregateId'>): T {
  if (!row)
    throw new Error(
      `event ${event.sequence} (${event.eventType}) changes ${event.aggregateType} ${event.aggregateId}, which does not exist`,
    );
  return row;
}

/** Row bookkeeping from the event: its workspace, the aggregate's version after it, and when. */
const metaOf = (event: TypedEvent<EventType>) => ({
  workspaceId: event.workspaceId,
  version: event.aggregateVersion,
  at: new Date(event.occurredAtCanonical),
});

/** Sets `changes` on an existing row, with the event's version and instant. */
function touch<R extends { version: number; updatedAt: Date }>(row: R, changes: Partial<R>, event: TypedEvent<EventType>): void {
  Object.assign(row, changes, { version: event.aggregateVersion, updatedAt: new Date(event.occurredAtCanonical) });
}

/** A row whose status a status change sets (every table of the hierarchy has these columns). */
interface StatusRow {
  status: string;
  pauseId: string | null;
  resumeStatus: string | null;
  version: number;
  updatedAt: Date;
}

/** Status changes of hierarchy nodes (lifecycle actions, and tasks following their runs), in the table `table` picks. */
const nodeStatus =
  (table: (state: ProjectionState) => Map<string, StatusRow>) =>
  (state: ProjectionState, event: TypedEvent<Exclude<StatusEventType, `run.${string}`>>): void => {
    const { status, pause_id, resume_status } = event.payload;
    touch(must(table(state).get(event.aggregateId), event), { status, pauseId: pause_id, resumeStatus: resume_status }, event);
  };
const initiativeStatus = nodeStatus((s) => s.initiatives);
const workstreamStatus = nodeStatus((s) => s.workstreams);
const milestoneStatus = nodeStatus((s) => s.milestones);
const taskStatus = nodeStatus((s) => s.tasks);

/** Every run event carries the whole run after it (events from before fences keep the run's). */
const runChanged = (
  state: ProjectionState,
  event: TypedEvent<Extract<StatusEventType, `run.${string}`> | 'run.checkpointed' | 'run.lease_renewed'>,
) => {
  const before = must(state.runs.get(event.aggregateId), event);
  const row = runRow(event.payload, metaOf(event));
  if (event.payload.fence === undefined) row.fence = before.fence;
  state.runs.set(event.aggregateId, row);
};

/** A new run; one created before fences gets its place among its task's runs, as the migration gave it. */
const runCreated = (state: ProjectionState, event: TypedEvent<'run.created'>) => {
  const row = runRow(event.payload, metaOf(event));
  if (event.payload.fence === undefined) {
    row.fence = 1 + [...state.runs.values()].filter((r) => r.taskId === row.taskId).length;
  }
  state.runs.set(event.aggregateId, row);
};

const claimChanged = (state: ProjectionState, event: TypedEvent<'dedup.claimed' | 'dedup.extended' | 'dedup.released'>) => {
  state.claims.set(event.payload.claim.claim_id, claimRow(event.payload.claim, metaOf(event)));
};

const decisionResolved = (
  state: ProjectionState,
  event: TypedEvent<'decision.approved' | 'decision.declined' | 'decision.cancelled' | 'decision.expired'>,
) => {
  const { status, resolution, approved_action, approved_action_digest } = event.payload;
  const changes: Partial<DecisionRow> = { status, resolution };
  if (approved_action && approved_action_digest)
    Object.assign(changes, { approvedAction: approved_action, approvedActionDigest: approved_action_digest });
  touch(must(state.decisions.get(event.aggregateId), event), changes, event);
};

/** A grant presented and refused, or consumed: its row moves to the event's version, and is used up or void. */
const grantPresented = (state: ProjectionState, event: TypedEvent<'grant.consumed' | 'grant.refused'>) => {
  const row = must(state.grants.get(event.aggregateId), event);
  const at = new Date(event.occurredAtCanonical);
  if (event.eventType === 'grant.consumed')
    Object.assign(row, { consumedAt: at, consumedByType: event.actorType, consumedById: event.actorId });
  else if ('reason' in event.payload && event.payload.reason === 'approval_stale' && !row.voidedAt) row.voidedAt = at;
  touch(row, {}, event);
};

/** For the event types that change no projection table (tenancy, credentials and webhook endpoints are not projections). */
const unprojected = () => {};

/** PATCH /tasks/{id} names the changed fields as the API does; these are their row fields. */
const TASK_FIELDS: Record<string, 'title' | 'description' | 'priority' | 'estimateHours' | 'agentId'> = {
  title: 'title',
  description: 'description',
  priority: 'priority',
  estimate_hours: 'estimateHours',
  agent_id: 'agentId',
};

/**
 * What each event type does to the state: one rule per type of the registry
 * (server/ledger/event-types.ts), so a new type without its rule does not compile.
 */
export type ProjectionRules = { [T in EventType]: (state: ProjectionState, event: TypedEvent<T>) => void };

const RULES: ProjectionRules = {
  'workspace.created': unprojected,
  'ledger.key_added': unprojected,
  'workspace.settings_changed': unprojected,
  'decision_policy.updated': unprojected,
  'passkey.registered': unprojected,
  'passkey.removed': unprojected,
  'membership.created': unprojected,
  'membership.role_changed': unprojected,
  'membership.delegation_set': unprojected,
  'membership.delegation_ended': unprojected,
  'membership.removed': unprojected,
  'invitation.created': unprojected,
  'invitation.accepted': unprojected,
  'invitation.revoked': unprojected,
  'api_key.created': unprojected,
  'api_key.revoked': unprojected,
  'webhook_endpoint.created': unprojected,
  'webhook_endpoint.updated': unprojected,
  'webhook_endpoint.enabled': unprojected,
  'webhook_endpoint.disabled': unprojected,
  'webhook_endpoint.deleted': unprojected,
  'webhook_endpoint.secret_rotated': unprojected,
  'webhook_endpoint.test': unprojected,

  'initiative.created': (state, event) => state.initiatives.set(event.aggregateId, initiativeRow(event.payload, metaOf(event))),
  'initiative.paused': initiativeStatus,
  'initiative.resumed': initiativeStatus,
  'initiative.cancelled': initiativeStatus,
  'initiative.reopened': initiativeStatus,

  'workstream.created': (state, event) => state.workstreams.set(event.aggregateId, workstreamRow(event.payload, metaOf(event))),
  'workstream.paused': workstreamStatus,
  'workstream.resumed': workstreamStatus,
  'workstream.cancelled': workstreamStatus,
  'workstream.reopened': workstreamStatus,

  'milestone.created': (state, event) => state.milestones.set(event.aggregateId, milestoneRow(event.payload, metaOf(event))),
  'milestone.paused': milestoneStatus,
  'milestone.resumed': milestoneStatus,
  'milestone.cancelled': milestoneStatus,
  'milestone.reopened': milestoneStatus,

  'task.created': (state, event) => state.tasks.set(event.aggregateId, taskRow(event.payload, metaOf(event))),
  'work.created': (state, event) => {
    const { task, receipt } = event.payload;
    const meta = metaOf(event);
    state.tasks.set(event.aggregateId, taskRow(task, meta));
    state.receipts.set(receipt.id, receiptRow(receipt, meta));
    state.receiptEvents.set(receipt.id, { eventId: event.id, eventHash: event.eventHash, sequence: event.sequence });
  },
  'task.updated': (state, event) => {
    // Each changed field's value after the change; a name the table has no field for changes nothing.
    const row = must(state.tasks.get(event.aggregateId), event);
    const changes = Object.entries(event.payload.changes).flatMap(([name, c]) =>
      Object.hasOwn(TASK_FIELDS, name) ? [[TASK_FIELDS[name]!, c.after] as const] : [],
    );
    touch(row, Object.fromEntries(changes), event);
  },
  'task.paused': taskStatus,
  'task.resumed': taskStatus,
  'task.cancelled': taskStatus,
  'task.status_changed': taskStatus,
  'task.redispatched': taskStatus,

  'run.created': runCreated,
  'run.started': runChanged,
  'run.paused': runChanged,
  'run.resumed': runChanged,
  'run.cancelled': runChanged,
  'run.rolled_back': runChanged,
  'run.released': runChanged,
  'run.completed': runChanged,
  'run.failed': runChanged,
  'run.lease_renewed': runChanged,
  'run.lease_expired': runChanged,
  'run.checkpointed': (state, event) => {
    runChanged(state, event);
    const { checkpoint } = event.payload;
    state.checkpoints.set(checkpoint.checkpoint_id, checkpointRow(checkpoint, event.workspaceId));
  },

  'receipt.imported': (state, event) =>
    state.imported.set(event.aggregateId, {
      workspaceId: event.workspaceId,
      receiptId: event.aggregateId,
      document: event.payload.document,
      documentDigest: event.payload.document_digest,
      importedAt: new Date(event.occurredAtCanonical),
    }),

  'dedup.claimed': claimChanged,
  'dedup.extended': claimChanged,
  'dedup.released': claimChanged,
  // The retention job removed a claim that had ended (server/domain/dedup/claims.ts pruneEndedClaims).
  'dedup.pruned': (state, event) => state.claims.delete(event.payload.claim.claim_id),

  'decision.created': (state, event) => {
    const p = event.payload;
    const at = new Date(event.occurredAtCanonical);
    state.decisions.set(event.aggregateId, {
      id: event.aggregateId,
      workspaceId: event.workspaceId,
      title: p.title,
      description: p.description,
      shape: p.shape,
      urgency: p.urgency,
      status: 'pending',
      blocksTask: p.blocks_task,
      taskId: p.task_id,
      runId: p.run_id,
      initiativeId: p.initiative_id,
      workstreamId: p.workstream_id,
      options: p.shape_context.options,
      dueAt: p.due_at ? new Date(p.due_at) : null,
      onTimeout: p.on_timeout,
      resolution: null,
      action: p.action,
      actionDigest: p.action_digest,
      editable: p.editable,
      grantTtlSeconds: p.grant_ttl_seconds,
      targetVersion: p.target_version,
      requirePasskey: p.require_passkey,
      artifactIds: p.artifacts.map((a) => a.id),
      policy: p.policy,
      policyDigest: p.policy_digest,
      policySource: p.policy_source,
      escalatedSteps: p.escalated_steps,
      nextEscalationAt: p.next_escalation_at ? new Date(p.next_escalation_at) : null,
      approvals: [],
      declines: [],
      approvedAction: null,
      approvedActionDigest: null,
      createdByType: p.created_by.type,
      createdById: p.created_by.id,
      version: event.aggregateVersion,
      createdAt: at,
      updatedAt: at,
    });
  },
  'decision.attention_requested': (state, event) => {
    const p = event.payload;
    touch(must(state.decisions.get(event.aggregateId), event), {}, event);
    state.attention.set(event.aggregateId, {
      decisionId: event.aggregateId,
      workspaceId: event.workspaceId,
      attentionId: p.attention_id,
      requestedAt: new Date(p.requested_at),
      lastRequestedAt: new Date(p.last_requested_at),
      requestCount: p.request_count,
      recommendedOptionId: p.recommended_option_id,
      recommendationNote: p.recommendation_note,
      impactIfDelayed: p.impact_if_delayed,
      continuationStrategy: p.continuation?.strategy ?? null,
    });
  },
  'decision.approval_recorded': (state, event) =>
    touch(must(state.decisions.get(event.aggregateId), event), { approvals: event.payload.approvals }, event),
  'decision.decline_recorded': (state, event) =>
    touch(must(state.decisions.get(event.aggregateId), event), { declines: event.payload.declines }, event),
  'decision.escalated': (state, event) =>
    touch(
      must(state.decisions.get(event.aggregateId), event),
      {
        escalatedSteps: event.payload.escalated_steps,
        nextEscalationAt: event.payload.next_escalation_at ? new Date(event.payload.next_escalation_at) : null,
      },
      event,
    ),
  'decision.approved': decisionResolved,
  'decision.declined': decisionResolved,
  'decision.cancelled': decisionResolved,
  'decision.expired': decisionResolved,

  'grant.issued': (state, event) => {
    const p = event.payload;
    const at = new Date(event.occurredAtCanonical);
    state.grants.set(event.aggregateId, {
      id: event.aggregateId,
      workspaceId: event.workspaceId,
      version: event.aggregateVersion,
      createdAt: at,
      updatedAt: at,
      decisionId: p.decision_id,
      actionDigest: p.action_digest,
      targetId: p.target?.id ?? null,
      targetVersion: p.target?.version ?? null,
      approverId: p.approver.id,
      passkey: p.approver.passkey,
      keyId: p.key_id,
      issuedAt: new Date(p.issued_at),
      expiresAt: new Date(p.expires_at),
      consumedAt: null,
      consumedByType: null,
      consumedById: null,
      voidedAt: null,
    });
  },
  'grant.consumed': grantPresented,
  'grant.refused': grantPresented,

  'artifact.registered': (state, event) => {
    const p = event.payload;
    const at = new Date(event.occurredAtCanonical);
    state.artifacts.set(event.aggregateId, {
      id: event.aggregateId,
      workspaceId: event.workspaceId,
      version: event.aggregateVersion,
      createdAt: at,
      updatedAt: at,
      artifactType: p.artifact_type,
      title: p.title,
      taskId: p.task_id,
      runId: p.run_id,
      mediaType: p.media_type,
      sha256: p.digest.slice('sha256:'.length),
      sizeBytes: p.size_bytes,
      storage: p.storage,
      uri: p.uri,
      metadata: p.metadata,
      createdByType: event.actorType,
      createdById: event.actorId,
      contentRemovedAt: null,
    });
  },
  'artifact.content_removed': (state, event) =>
    touch(must(state.artifacts.get(event.aggregateId), event), { contentRemovedAt: new Date(event.payload.removed_at) }, event),
};

// Generic so that the rule looked up for the event's type takes that very event (T ties the two).
function applyRule<T extends EventType>(state: ProjectionState, event: TypedEvent<T>): void {
  RULES[event.eventType](state, event);
}

/**
 * Applies one event to the state, its payload read as its type says (event-types.ts readEvent).
 * Throws on an event type the registry does not know, so none is silently lost.
 */
function apply(state: ProjectionState, event: LedgerEvent): void {
  if (!isEventType(event.eventType)) {
    throw new Error(`no projection rule for event type ${event.eventType} (sequence ${event.sequence})`);
  }
  applyRule(state, readEvent(event, event.eventType));
}

/** Replays events (in sequence order) into a state. */
export function fold(events: Iterable<LedgerEvent>, state = emptyState()): ProjectionState {
  for (const event of events) apply(state, event);
  return state;
}

/** The projection tables of one workspace, read as they are. */
export async function loadFromTables(db: Executor, workspaceId: string): Promise<ProjectionState> {
  const byId = <R extends { id: string }>(rows: R[]) => new Map(rows.map((r) => [r.id, r]));
  const [i, w, m, t, r, ru, d, a, cp, cl, im, g, ar] = await Promise.all([
    db.select().from(initiatives).where(eq(initiatives.workspaceId, workspaceId)),
    db.select().from(workstreams).where(eq(workstreams.workspaceId, workspaceId)),
    db.select().from(milestones).where(eq(milestones.workspaceId, workspaceId)),
    db.select().from(tasks).where(eq(tasks.workspaceId, workspaceId)),
    db.select().from(receipts).where(eq(receipts.workspaceId, workspaceId)),
    db.select().from(runs).where(eq(runs.workspaceId, workspaceId)),
    db.select().from(decisions).where(eq(decisions.workspaceId, workspaceId)),
    db.select().from(decisionAttention).where(eq(decisionAttention.workspaceId, workspaceId)),
    db.select().from(runCheckpoints).where(eq(runCheckpoints.workspaceId, workspaceId)),
    db.select().from(dedupClaims).where(eq(dedupClaims.workspaceId, workspaceId)),
    db.select().from(importedReceipts).where(eq(importedReceipts.workspaceId, workspaceId)),
    db.select().from(decisionGrants).where(eq(decisionGrants.workspaceId, workspaceId)),
    db.select().from(artifacts).where(eq(artifacts.workspaceId, workspaceId)),
  ]);
  const state: ProjectionState = {
    initiatives: byId(i),
    workstreams: byId(w),
    milestones: byId(m),
    tasks: byId(t),
    receipts: byId(r),
    runs: byId(ru),
    checkpoints: byId(cp),
    claims: byId(cl),
    imported: new Map(im.map((x) => [x.receiptId, x])),
    decisions: byId(d),
    attention: new Map(a.map((x) => [x.decisionId, x])),
    grants: byId(g),
    artifacts: byId(ar),
    receiptEvents: new Map(),
  };
  // Evidence names the event that recorded each receipt; the tables keep receipts, the ledger keeps hashes.
  const taskIds = [...new Set(r.map((x) => x.taskId))];
  for (let start = 0; start < taskIds.length; start += 1000) {
    const chunk = taskIds.slice(start, start + 1000);
    const rows = await db
      .select({ id: ledgerEvents.id, hash: ledgerEvents.eventHash, sequence: ledgerEvents.sequence, taskId: ledgerEvents.aggregateId })
      .from(ledgerEvents)
      .where(
        and(
          eq(ledgerEvents.workspaceId, workspaceId),
          eq(ledgerEvents.eventType, 'work.created'),
          inArray(ledgerEvents.aggregateId, chunk),
        ),
      )
      .orderBy(asc(ledgerEvents.sequence));
    const byTask = new Map(rows.map((x) => [x.taskId, x]));
    for (const receipt of r) {
      const e = byTask.get(receipt.taskId);
      if (e) state.receiptEvents.set(receipt.id, { eventId: e.id, eventHash: e.hash, sequence: e.sequence });
    }
  }
  return state;
}
