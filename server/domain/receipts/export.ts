/**
 * A receipt as a portable agent-work-receipt/v0.1 document: the receipt and its task, who acted,
 * the task's ledger events with their hashes (so anyone holding the workspace chain can check
 * them), the event that recorded the receipt as evidence, the human rulings on the task's
 * decisions (with the grant of each approved action, and when it was used), the run that produced
 * its outcome with that run's fence, the calls its runs made through the MCP gateway (by digest), and the proof that the recording event is in the signed ledger (`ledger_proof`). The validator accepts every document this builds (tested by a round trip).
 */
import { and, asc, desc, eq, inArray, isNotNull, or, sql } from 'drizzle-orm';
import type { Executor } from '@/db';
import {
  artifacts,
  artifactTypes,
  decisionGrants,
  decisions,
  ledgerEvents,
  receipts,
  runs,
  tasks,
  toolCalls,
  type taskTypes,
} from '@/db/schema';
import { ledgerProofOf } from '@/server/ledger/proofs';
import { registeringEvent } from '@/server/ledger/registering-event';
import { RECEIPT_SCHEMA_VERSION } from './validate';

export async function receiptWorkspace(db: Executor, receiptId: string): Promise<string | undefined> {
  const [row] = await db.select({ workspaceId: receipts.workspaceId }).from(receipts).where(eq(receipts.id, receiptId));
  return row?.workspaceId;
}

/**
 * The catalog stage whose deliverable artifact types a task of each type is expected to produce
 * (docs/contract.md §4.17): a `done` task of that type with none of them gets the
 * `missing_deliverables` warning. A decision task delivers a ruling, not an artifact.
 */
const DELIVERABLE_STAGE: Record<(typeof taskTypes)[number], string | null> = {
  research: 'discover',
  build: 'build',
  review: 'review',
  ops: 'operate',
  decision: null,
};

/**
 * A task's artifacts: those registered with it (or with one of its runs), and those its runs named
 * when they finished, oldest first, each with the event that registered it.
 */
async function taskArtifacts(db: Executor, workspaceId: string, taskId: string) {
  const named = db
    .select({ id: sql`unnest(${runs.artifactIds})` })
    .from(runs)
    .where(eq(runs.taskId, taskId));
  return db
    .select({ artifact: artifacts, event: ledgerEvents })
    .from(artifacts)
    .innerJoin(ledgerEvents, registeringEvent)
    .where(and(eq(artifacts.workspaceId, workspaceId), or(eq(artifacts.taskId, taskId), inArray(artifacts.id, named))))
    .orderBy(asc(artifacts.createdAt), asc(artifacts.id));
}

export async function exportReceipt(db: Executor, workspaceId: string, receiptId: string): Promise<Record<string, unknown> | undefined> {
  const [found] = await db
    .select({ receipt: receipts, task: tasks })
    .from(receipts)
    .innerJoin(tasks, eq(tasks.id, receipts.taskId))
    .where(and(eq(receipts.id, receiptId), eq(receipts.workspaceId, workspaceId)));
  if (!found) return undefined;
  const { receipt, task } = found;
  const events = await db
    .select()
    .from(ledgerEvents)
    .where(and(eq(ledgerEvents.workspaceId, workspaceId), eq(ledgerEvents.aggregateId, task.id)))
    .orderBy(asc(ledgerEvents.sequence));
  const recorded = events.find((e) => e.eventType === 'work.created') ?? events[0];
  const rulings = await db
    .select({
      id: decisions.id,
      title: decisions.title,
      resolution: decisions.resolution,
      grantId: decisionGrants.id,
      grantDigest: decisionGrants.actionDigest,
      grantConsumedAt: decisionGrants.consumedAt,
    })
    .from(decisions)
    .leftJoin(decisionGrants, eq(decisionGrants.decisionId, decisions.id))
    .where(and(eq(decisions.workspaceId, workspaceId), eq(decisions.taskId, task.id), isNotNull(decisions.resolution)))
    .orderBy(asc(decisions.createdAt), asc(decisions.id));
  const proof = recorded ? await ledgerProofOf(db, workspaceId, recorded.sequence) : null;
  const delivered = await taskArtifacts(db, workspaceId, task.id);
  const stage = DELIVERABLE_STAGE[task.type];
  const expected =
    task.status === 'done' && stage
      ? (
          await db
            .select({ code: artifactTypes.typeCode })
            .from(artifactTypes)
            .where(and(eq(artifactTypes.stage, stage), eq(artifactTypes.isDeliverable, true)))
            .orderBy(asc(artifactTypes.sortOrder))
        ).map((t) => t.code)
      : [];
  const missingDeliverables = expected.length > 0 && !delivered.some((d) => expected.includes(d.artifact.artifactType));
  // The run that produced the task's outcome: its latest, by fence.
  const [run] = await db
    .select({ id: runs.id, fence: runs.fence, agentId: runs.agentId, status: runs.status })
    .from(runs)
    .where(eq(runs.taskId, task.id))
    .orderBy(desc(runs.fence))
    .limit(1);
  // The gateway calls its runs made (named by `_meta.run_id`), by digest.
  const calls = await db
    .select()
    .from(toolCalls)
    .where(
      and(
        eq(toolCalls.workspaceId, workspaceId),
        inArray(toolCalls.runId, db.select({ id: runs.id }).from(runs).where(eq(runs.taskId, task.id))),
      ),
    )
    .orderBy(asc(toolCalls.createdAt), asc(toolCalls.id));
  return {
    schema_version: RECEIPT_SCHEMA_VERSION,
    receipt_id: receipt.id,
    workspace_id: workspaceId,
    task: {
      id: task.id,
      title: task.title,
      status: task.status,
      initiative_id: task.initiativeId,
      workstream_id: task.workstreamId,
      milestone_id: task.milestoneId,
    },
    summary: receipt.summary,
    status: receipt.status,
    actor: recorded ? { type: recorded.actorType, id: recorded.actorId } : { type: 'system', id: 'system' },
    created_at: receipt.createdAt.toISOString(),
    updated_at: receipt.updatedAt.toISOString(),
    evidence: recorded
      ? [
          {
            kind: 'ledger_event',
            description: `The ${recorded.eventType} event (sequence ${recorded.sequence}) that recorded this receipt.`,
            digest: recorded.eventHash,
          },
        ]
      : [],
    events: events.map((e) => ({
      id: e.id,
      sequence: e.sequence,
      eventType: e.eventType,
      aggregateId: e.aggregateId,
      occurredAt: e.occurredAtCanonical,
      payloadDigest: e.payloadDigest,
      previousHash: e.previousHash,
      eventHash: e.eventHash,
    })),
    rulings: rulings.map((d) => ({
      decision_id: d.id,
      title: d.title,
      outcome: d.resolution!.outcome,
      option_ids: d.resolution!.option_ids,
      note: d.resolution!.note,
      resolved_by: d.resolution!.resolved_by,
      resolved_by_type: d.resolution!.resolved_by_type,
      resolved_at: d.resolution!.resolved_at,
      // The approved action's grant, and whether the work used it.
      ...(d.grantId
        ? { grant: { grant_id: d.grantId, action_digest: d.grantDigest!, consumed_at: d.grantConsumedAt?.toISOString() ?? null } }
        : {}),
    })),
    ...(run ? { run: { run_id: run.id, fence: run.fence, agent_id: run.agentId, status: run.status } } : {}),
    ...(calls.length > 0
      ? {
          tool_calls: calls.map((c) => ({
            tool_call_id: c.id,
            run_id: c.runId!,
            server: c.server,
            tool: c.tool,
            mode: c.mode,
            status: c.status,
            reason: c.reason,
            arguments_digest: c.argumentsDigest,
            result_digest: c.resultDigest,
            is_error: c.isError,
            decision_id: c.decisionId,
            grant_id: c.grantId,
            called_at: c.createdAt.toISOString(),
          })),
        }
      : {}),
    // What the task delivered, by digest: `sha256sum` of a copy prints the hex of `digest`.
    artifacts: delivered.map(({ artifact: a, event: e }) => ({
      artifact_id: a.id,
      artifact_type: a.artifactType,
      title: a.title,
      digest: `sha256:${a.sha256}`,
      size_bytes: a.sizeBytes,
      media_type: a.mediaType,
      storage: a.storage,
      uri: a.uri,
      registered: { event_id: e.id, sequence: e.sequence, event_hash: e.eventHash, payload_digest: e.payloadDigest },
    })),
    ...(missingDeliverables
      ? {
          warnings: [
            {
              code: 'missing_deliverables',
              message: `The task is done, but none of its artifacts is a deliverable its type (${task.type}) produces: ${expected.join(', ')}.`,
              expected_artifact_types: expected,
            },
          ],
        }
      : {}),
    // Absent until a checkpoint covers the recording event (the schema has no null for it).
    ...(proof ? { ledger_proof: proof } : {}),
  };
}
