/**
 * The projection tables as one in-memory state, built either by replaying the ledger (`fold`) or by
 * reading the tables (`loadFromTables`). The two must always agree: that is what "the tables are
 * projections of the ledger" means, and the test suite checks it. The operating map is computed
 * from the folded state, and `projections:rebuild` writes it back into emptied tables.
 */
import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import {
  decisionAttention,
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
  type DecisionResolution,
} from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import {
  checkpointRow,
  claimRow,
  runRow,
  initiativeRow,
  milestoneRow,
  receiptRow,
  taskRow,
  workstreamRow,
  type InitiativeRecord,
  type InitiativeRow,
  type MilestoneRecord,
  type MilestoneRow,
  type ReceiptRecord,
  type ReceiptRow,
  type TaskRecord,
  type TaskRow,
  type WorkstreamRecord,
  type WorkstreamRow,
  type RunRecord,
  type RunRow,
  type CheckpointRecord,
  type CheckpointRow,
  type ClaimRecord,
  type ClaimRow,
} from '@/server/domain/hierarchy/records';
import type { AttentionRow, DecisionRow } from '@/server/domain/decisions/view';

type ImportedRow = typeof importedReceipts.$inferSelect;

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
    receiptEvents: new Map(),
  };
}

/** Event types that change no projection table (tenancy, credentials and webhook endpoints are not projections). */
const NOT_PROJECTED = new Set([
  'workspace.created',
  'membership.created',
  'membership.role_changed',
  'membership.removed',
  'invitation.created',
  'invitation.accepted',
  'invitation.revoked',
  'api_key.created',
  'api_key.revoked',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.enabled',
  'webhook_endpoint.disabled',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.test',
]);

type Payload = Record<string, unknown>;

function must<T>(row: T | undefined, event: LedgerEvent): T {
  if (!row)
    throw new Error(
      `event ${event.sequence} (${event.eventType}) changes ${event.aggregateType} ${event.aggregateId}, which does not exist`,
    );
  return row;
}

/** Applies one event to the state. Throws on an event type it does not know, so none is silently lost. */
function apply(state: ProjectionState, event: LedgerEvent): void {
  const p = event.payload as Payload;
  const at = new Date(event.occurredAtCanonical);
  const meta = { workspaceId: event.workspaceId, version: event.aggregateVersion, at };
  const touch = <R extends { version: number; updatedAt: Date }>(row: R, changes: Partial<R>) =>
    Object.assign(row, changes, { version: event.aggregateVersion, updatedAt: at });

  switch (event.eventType) {
    case 'initiative.created':
      state.initiatives.set(event.aggregateId, initiativeRow(p as unknown as InitiativeRecord, meta));
      return;
    case 'workstream.created':
      state.workstreams.set(event.aggregateId, workstreamRow(p as unknown as WorkstreamRecord, meta));
      return;
    case 'milestone.created':
      state.milestones.set(event.aggregateId, milestoneRow(p as unknown as MilestoneRecord, meta));
      return;
    case 'task.created':
      state.tasks.set(event.aggregateId, taskRow(p as unknown as TaskRecord, meta));
      return;
    case 'task.updated': {
      // PATCH /tasks/{id}: each changed field's value after the change (API names → row fields).
      const row = must(state.tasks.get(event.aggregateId), event);
      const changes = p.changes as Record<string, { after: unknown }>;
      const fields: Record<string, keyof typeof row> = {
        title: 'title',
        description: 'description',
        priority: 'priority',
        estimate_hours: 'estimateHours',
        agent_id: 'agentId',
      };
      touch(row, Object.fromEntries(Object.entries(changes).map(([name, c]) => [fields[name]!, c.after])));
      return;
    }
    case 'work.created': {
      const receipt = p.receipt as ReceiptRecord;
      state.tasks.set(event.aggregateId, taskRow(p.task as TaskRecord, meta));
      state.receipts.set(receipt.id, receiptRow(receipt, meta));
      state.receiptEvents.set(receipt.id, { eventId: event.id, eventHash: event.eventHash, sequence: event.sequence });
      return;
    }
    // Status changes of hierarchy nodes (lifecycle actions, and tasks following their runs).
    case 'initiative.paused':
    case 'initiative.resumed':
    case 'initiative.cancelled':
    case 'initiative.reopened':
    case 'workstream.paused':
    case 'workstream.resumed':
    case 'workstream.cancelled':
    case 'workstream.reopened':
    case 'milestone.paused':
    case 'milestone.resumed':
    case 'milestone.cancelled':
    case 'milestone.reopened':
    case 'task.paused':
    case 'task.resumed':
    case 'task.cancelled':
    case 'task.status_changed':
    case 'task.redispatched': {
      const table = {
        initiative: state.initiatives,
        workstream: state.workstreams,
        milestone: state.milestones,
        task: state.tasks,
      }[event.aggregateType as 'initiative' | 'workstream' | 'milestone' | 'task'];
      const row = must(table?.get(event.aggregateId), event) as {
        status: string;
        pauseId: string | null;
        resumeStatus: string | null;
        version: number;
        updatedAt: Date;
      };
      touch(row, {
        status: p.status as string,
        pauseId: (p.pause_id as string | null) ?? null,
        resumeStatus: (p.resume_status as string | null) ?? null,
      });
      return;
    }

    // Every run event carries the whole run after it.
    case 'run.created':
    case 'run.started':
    case 'run.paused':
    case 'run.resumed':
    case 'run.cancelled':
    case 'run.rolled_back':
    case 'run.released':
    case 'run.completed':
    case 'run.failed':
    case 'run.checkpointed': {
      if (event.eventType !== 'run.created') must(state.runs.get(event.aggregateId), event);
      state.runs.set(event.aggregateId, runRow(p as unknown as RunRecord, meta));
      if (event.eventType === 'run.checkpointed') {
        const checkpoint = p.checkpoint as CheckpointRecord;
        state.checkpoints.set(checkpoint.checkpoint_id, checkpointRow(checkpoint, event.workspaceId));
      }
      return;
    }

    case 'receipt.imported':
      state.imported.set(event.aggregateId, {
        workspaceId: event.workspaceId,
        receiptId: event.aggregateId,
        document: p.document as Record<string, unknown>,
        documentDigest: p.document_digest as string,
        importedAt: at,
      });
      return;

    case 'dedup.claimed':
    case 'dedup.extended':
    case 'dedup.released': {
      const claim = p.claim as ClaimRecord;
      state.claims.set(claim.claim_id, claimRow(claim, meta));
      return;
    }

    // The retention job removed a claim that had ended (server/domain/dedup/claims.ts pruneEndedClaims).
    case 'dedup.pruned':
      state.claims.delete((p.claim as ClaimRecord).claim_id);
      return;

    case 'decision.created':
      state.decisions.set(event.aggregateId, {
        id: event.aggregateId,
        workspaceId: event.workspaceId,
        title: p.title as string,
        description: (p.description as string | null) ?? null,
        shape: p.shape as DecisionRow['shape'],
        urgency: p.urgency as DecisionRow['urgency'],
        status: 'pending',
        blocksTask: p.blocks_task as boolean,
        taskId: (p.task_id as string | null) ?? null,
        runId: (p.run_id as string | null) ?? null,
        initiativeId: (p.initiative_id as string | null) ?? null,
        workstreamId: (p.workstream_id as string | null) ?? null,
        options: (p.shape_context as { options: DecisionRow['options'] }).options,
        dueAt: p.due_at ? new Date(p.due_at as string) : null,
        onTimeout: p.on_timeout as DecisionRow['onTimeout'],
        resolution: null,
        createdByType: (p.created_by as { type: DecisionRow['createdByType'] }).type,
        createdById: (p.created_by as { id: string }).id,
        version: event.aggregateVersion,
        createdAt: at,
        updatedAt: at,
      });
      return;
    case 'decision.attention_requested': {
      touch(must(state.decisions.get(event.aggregateId), event), {});
      const continuation = p.continuation as { strategy: AttentionRow['continuationStrategy'] } | null;
      state.attention.set(event.aggregateId, {
        decisionId: event.aggregateId,
        workspaceId: event.workspaceId,
        attentionId: p.attention_id as string,
        requestedAt: new Date(p.requested_at as string),
        lastRequestedAt: new Date(p.last_requested_at as string),
        requestCount: p.request_count as number,
        recommendedOptionId: (p.recommended_option_id as string | null) ?? null,
        recommendationNote: (p.recommendation_note as string | null) ?? null,
        impactIfDelayed: (p.impact_if_delayed as string | null) ?? null,
        continuationStrategy: continuation?.strategy ?? null,
      });
      return;
    }
    case 'decision.approved':
    case 'decision.declined':
    case 'decision.cancelled':
    case 'decision.expired':
      touch(must(state.decisions.get(event.aggregateId), event), {
        status: p.status as DecisionRow['status'],
        resolution: p.resolution as DecisionResolution,
      });
      return;

    default:
      if (NOT_PROJECTED.has(event.eventType)) return;
      throw new Error(`no projection rule for event type ${event.eventType} (sequence ${event.sequence})`);
  }
}

/** Replays events (in sequence order) into a state. */
export function fold(events: Iterable<LedgerEvent>, state = emptyState()): ProjectionState {
  for (const event of events) apply(state, event);
  return state;
}

/** The projection tables of one workspace, read as they are. */
export async function loadFromTables(db: Executor, workspaceId: string): Promise<ProjectionState> {
  const byId = <R extends { id: string }>(rows: R[]) => new Map(rows.map((r) => [r.id, r]));
  const [i, w, m, t, r, ru, d, a, cp, cl, im] = await Promise.all([
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
