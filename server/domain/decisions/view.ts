/**
 * A decision as the API shows it: the row, its attention record, its resolution and its history
 * (the decision's own ledger events, oldest first).
 */
import { and, asc, eq, inArray, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { Executor } from '@/db';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { grantTokens, type GrantRow } from '../grants/token';
import { isGrantHolder } from '../grants/azp';
import type { Actor } from '../actor';
import { artifactView, type ArtifactView } from '../artifacts/view';
import { DEFAULT_POLICY, policyDigest } from './policy';
import {
  apiKeys,
  artifacts,
  decisionAttention,
  decisionGrants,
  decisions,
  ledgerEvents,
  users,
  type DecisionAction,
  type DecisionOption,
  type DecisionPolicy,
  type DecisionResolution,
  type DecisionRuling,
  type PolicySource,
  type DecisionShape,
  type DecisionStatus,
  type DecisionUrgency,
} from '@/db/schema';

export type DecisionRow = typeof decisions.$inferSelect;

// Decisions raised before policies (policy null) were ruled by the default policy, and show it.
const DEFAULT_POLICY_DIGEST = policyDigest(DEFAULT_POLICY);
const DEFAULT_SOURCE: PolicySource = { type: 'default', rule_index: null, rules_version: null };
export type AttentionRow = typeof decisionAttention.$inferSelect;

export interface AttentionView {
  attention_id: string;
  requested_at: string;
  last_requested_at: string;
  request_count: number;
  recommended_option_id: string | null;
  recommendation_note: string | null;
  impact_if_delayed: string | null;
  continuation: { strategy: NonNullable<AttentionRow['continuationStrategy']> } | null;
}

export interface HistoryEntry {
  event_id: string;
  event_type: string;
  sequence: number;
  actor_type: string;
  actor_id: string;
  /** Who that is in words: a human's name, an API key's name; null for the system. */
  actor_name: string | null;
  occurred_at: string;
  event_hash: string;
}

/**
 * The grant of an approved action. Its token, for the tool server that will run the action, only to
 * the party the grant is for (grants/azp.ts); null to everyone else.
 */
export interface GrantView {
  id: string;
  token: string | null;
  action_digest: string;
  expires_at: string;
  consumed_at: string | null;
  voided_at: string | null;
}

export interface DecisionView {
  id: string;
  workspace_id: string;
  title: string;
  description: string | null;
  status: DecisionStatus;
  shape: DecisionShape;
  urgency: DecisionUrgency;
  blocks_task: boolean;
  task_id: string | null;
  run_id: string | null;
  initiative_id: string | null;
  workstream_id: string | null;
  shape_context: { options: DecisionOption[] };
  due_at: string | null;
  on_timeout: 'expire' | 'decline';
  resolution: DecisionResolution | null;
  action: DecisionAction | null;
  action_digest: string | null;
  editable: boolean;
  grant_ttl_seconds: number | null;
  require_passkey: boolean;
  approved_action: DecisionAction | null;
  approved_action_digest: string | null;
  grant: GrantView | null;
  /** Raised by the MCP gateway for a call of an upstream tool: the server (its id and name) and the tool. */
  gateway: { server_id: string; server: string; tool: string } | null;
  /** The artifacts the approver is shown: what the decision is about, by digest. */
  artifacts: ArtifactView[];
  /** The policy frozen when it was raised, its digest and where it came from. */
  policy: DecisionPolicy;
  policy_digest: string;
  policy_source: PolicySource;
  /** How many of the policy's escalation steps have been reached, and when the next one is due. */
  escalated_steps: number;
  next_escalation_at: string | null;
  /** The approvals towards the policy's quorum so far, in order. */
  approvals: DecisionRuling[];
  /** Declines that did not end it (a policy without veto). */
  declines: DecisionRuling[];
  attention: AttentionView | null;
  history: HistoryEntry[];
  created_by: { type: DecisionRow['createdByType']; id: string };
  created_at: string;
  updated_at: string;
}

/** The gateway call a decision was raised for: its action's tool is `<server>.<tool>` (a server's name has no dot). */
function gatewayOf(row: DecisionRow): DecisionView['gateway'] {
  if (!row.gatewayServerId || !row.action) return null;
  const at = row.action.tool.indexOf('.');
  return { server_id: row.gatewayServerId, server: row.action.tool.slice(0, at), tool: row.action.tool.slice(at + 1) };
}

export function attentionView(row: AttentionRow | null | undefined): AttentionView | null {
  if (!row) return null;
  return {
    attention_id: row.attentionId,
    requested_at: row.requestedAt.toISOString(),
    last_requested_at: row.lastRequestedAt.toISOString(),
    request_count: row.requestCount,
    recommended_option_id: row.recommendedOptionId,
    recommendation_note: row.recommendationNote,
    impact_if_delayed: row.impactIfDelayed,
    continuation: row.continuationStrategy ? { strategy: row.continuationStrategy } : null,
  };
}

export function decisionView(
  row: DecisionRow,
  attention: AttentionRow | null | undefined,
  history: HistoryEntry[],
  grant: GrantView | null = null,
  artifacts: ArtifactView[] = [],
): DecisionView {
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    title: row.title,
    description: row.description,
    status: row.status,
    shape: row.shape,
    urgency: row.urgency,
    blocks_task: row.blocksTask,
    task_id: row.taskId,
    run_id: row.runId,
    initiative_id: row.initiativeId,
    workstream_id: row.workstreamId,
    shape_context: { options: row.options },
    due_at: row.dueAt?.toISOString() ?? null,
    on_timeout: row.onTimeout,
    resolution: row.resolution ?? null,
    action: row.action ?? null,
    action_digest: row.actionDigest,
    editable: row.editable,
    grant_ttl_seconds: row.grantTtlSeconds,
    require_passkey: row.requirePasskey,
    approved_action: row.approvedAction ?? null,
    approved_action_digest: row.approvedActionDigest,
    grant,
    gateway: gatewayOf(row),
    artifacts,
    policy: row.policy ?? DEFAULT_POLICY,
    policy_digest: row.policyDigest ?? DEFAULT_POLICY_DIGEST,
    policy_source: row.policySource ?? DEFAULT_SOURCE,
    escalated_steps: row.escalatedSteps,
    next_escalation_at: row.nextEscalationAt?.toISOString() ?? null,
    approvals: row.approvals,
    declines: row.declines,
    attention: attentionView(attention),
    history,
    created_by: { type: row.createdByType, id: row.createdById },
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/**
 * An actor's name in words, as it is now (a renamed key shows its new name; ids stay in actor_id):
 * a human's display name, an API key's name, null for the system.
 */
export function actorNameSql(workspaceId: string, type: SQLWrapper | string, id: SQLWrapper | string): SQL<string | null> {
  return sql<string | null>`case ${type}
    when 'human' then (select ${users.displayName} from ${users} where ${users.id}::text = ${id})
    when 'api_key' then (select ${apiKeys.name} from ${apiKeys} where ${apiKeys.workspaceId} = ${workspaceId} and ${apiKeys.id}::text = ${id})
    end`;
}

/** The ledger events of the given decisions, oldest first, grouped by decision. */
async function historiesOf(db: Executor, workspaceId: string, decisionIds: string[]): Promise<Map<string, HistoryEntry[]>> {
  const out = new Map<string, HistoryEntry[]>(decisionIds.map((id) => [id, []]));
  if (decisionIds.length === 0) return out;
  const rows = await db
    .select({
      aggregateId: ledgerEvents.aggregateId,
      id: ledgerEvents.id,
      eventType: ledgerEvents.eventType,
      sequence: ledgerEvents.sequence,
      actorType: ledgerEvents.actorType,
      actorId: ledgerEvents.actorId,
      actorName: actorNameSql(workspaceId, ledgerEvents.actorType, ledgerEvents.actorId),
      occurredAt: ledgerEvents.occurredAtCanonical,
      eventHash: ledgerEvents.eventHash,
    })
    .from(ledgerEvents)
    .where(and(eq(ledgerEvents.workspaceId, workspaceId), inArray(ledgerEvents.aggregateId, decisionIds)))
    .orderBy(asc(ledgerEvents.sequence));
  for (const r of rows) {
    out.get(r.aggregateId)?.push({
      event_id: r.id,
      event_type: r.eventType,
      sequence: r.sequence,
      actor_type: r.actorType,
      actor_id: r.actorId,
      actor_name: r.actorName,
      occurred_at: r.occurredAt,
      event_hash: r.eventHash,
    });
  }
  return out;
}

function grantView(row: GrantRow, token: string | null): GrantView {
  return {
    id: row.id,
    token,
    action_digest: row.actionDigest,
    expires_at: row.expiresAt.toISOString(),
    consumed_at: row.consumedAt?.toISOString() ?? null,
    voided_at: row.voidedAt?.toISOString() ?? null,
  };
}

/** Who reads the decisions: a grant's token is shown only to the party it is for. */
export type Viewer = Pick<Actor, 'type' | 'id'>;

/**
 * Full views of the given rows (attention, history and grants in one query each), as `viewer` may
 * see them. `settings` sign the grants' tokens.
 */
export async function decisionViews(
  db: Executor,
  workspaceId: string,
  rows: DecisionRow[],
  settings: SigningSettings,
  viewer: Viewer,
): Promise<DecisionView[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const approved = rows.filter((r) => r.approvedActionDigest !== null).map((r) => r.id);
  const named = [...new Set(rows.flatMap((r) => r.artifactIds))];
  const [attention, histories, grantRows, artifactRows] = await Promise.all([
    db.select().from(decisionAttention).where(inArray(decisionAttention.decisionId, ids)),
    historiesOf(db, workspaceId, ids),
    approved.length > 0 ? db.select().from(decisionGrants).where(inArray(decisionGrants.decisionId, approved)) : [],
    named.length > 0
      ? db
          .select()
          .from(artifacts)
          .where(and(eq(artifacts.workspaceId, workspaceId), inArray(artifacts.id, named)))
      : [],
  ]);
  const artifactById = new Map(artifactRows.map((a) => [a.id, artifactView(a)]));
  const byId = new Map(attention.map((a) => [a.decisionId, a]));
  const grants = new Map<string, GrantView | null>();
  // The viewer's grants' tokens at once: their keys read and opened once, not once per grant.
  const theirs = grantRows.filter((g) => isGrantHolder(g.azp, viewer));
  const tokens = await grantTokens(db, workspaceId, theirs, settings);
  for (const g of grantRows) grants.set(g.decisionId, grantView(g, tokens.get(g.id) ?? null));
  return rows.map((r) =>
    decisionView(
      r,
      byId.get(r.id),
      histories.get(r.id) ?? [],
      grants.get(r.id) ?? null,
      r.artifactIds.flatMap((id) => artifactById.get(id) ?? []),
    ),
  );
}

/** One decision of the workspace, or null. */
export async function findDecision(db: Executor, workspaceId: string, id: string): Promise<DecisionRow | null> {
  const [row] = await db
    .select()
    .from(decisions)
    .where(and(eq(decisions.workspaceId, workspaceId), eq(decisions.id, id)));
  return row ?? null;
}

export async function loadDecisionView(
  db: Executor,
  workspaceId: string,
  id: string,
  settings: SigningSettings,
  viewer: Viewer,
): Promise<DecisionView | null> {
  const row = await findDecision(db, workspaceId, id);
  if (!row) return null;
  const [view] = await decisionViews(db, workspaceId, [row], settings, viewer);
  return view ?? null;
}
