/**
 * The decisions' slice of the event registry (their payloads, decision-payloads.ts), their
 * projection rules, and the one `decisionRow(payload)` that makes a raised decision's row on the
 * write (create-decision.ts) and on the replay.
 */
import type { decisionAttention, decisions } from '@/db/schema';
import { readBack, type PayloadOf, type TypedEvent } from '@/server/ledger/event-types';
import { metaOf, must, touch, type ProjectionState, type RowMeta, type RulesOf } from '../projection';
import {
  approvalRecorded,
  attentionRequested,
  decisionCreated,
  decisionEscalated,
  decisionResolved,
  declineRecorded,
} from './decision-payloads';

type DecisionRow = typeof decisions.$inferSelect;
type AttentionRow = typeof decisionAttention.$inferSelect;

export const decisionEvents = {
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
};

/** A raised decision's row: pending, unruled, as its `decision.created` payload says. */
export const decisionRow = (p: PayloadOf<'decision.created'>, m: RowMeta): DecisionRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
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
  gatewayServerId: p.gateway?.server_id ?? null,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

/**
 * The attention record as a request left it. The write upserts it in SQL (a repeated request adds
 * to the count) and writes the row it got into the payload; the replay takes the payload's.
 */
const attentionRow = (decisionId: string, p: PayloadOf<'decision.attention_requested'>, workspaceId: string): AttentionRow => ({
  decisionId,
  workspaceId,
  attentionId: p.attention_id,
  requestedAt: new Date(p.requested_at),
  lastRequestedAt: new Date(p.last_requested_at),
  requestCount: p.request_count,
  recommendedOptionId: p.recommended_option_id,
  recommendationNote: p.recommendation_note,
  impactIfDelayed: p.impact_if_delayed,
  continuationStrategy: p.continuation?.strategy ?? null,
});

const resolved = (
  state: ProjectionState,
  event: TypedEvent<'decision.approved' | 'decision.declined' | 'decision.cancelled' | 'decision.expired'>,
) => {
  const { status, resolution, approved_action, approved_action_digest } = event.payload;
  const changes: Partial<DecisionRow> = { status, resolution };
  if (approved_action && approved_action_digest)
    Object.assign(changes, { approvedAction: approved_action, approvedActionDigest: approved_action_digest });
  touch(must(state.decisions.get(event.aggregateId), event), changes, event);
};

export const decisionRules: RulesOf<typeof decisionEvents> = {
  'decision.created': (state, event) => state.decisions.set(event.aggregateId, decisionRow(event.payload, metaOf(event))),
  'decision.attention_requested': (state, event) => {
    touch(must(state.decisions.get(event.aggregateId), event), {}, event);
    state.attention.set(event.aggregateId, attentionRow(event.aggregateId, event.payload, event.workspaceId));
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
  'decision.approved': resolved,
  'decision.declined': resolved,
  'decision.cancelled': resolved,
  'decision.expired': resolved,
};
