/**
 * The work hierarchy's records: how each row is written into its ledger event's payload, and how a
 * payload becomes a row again. Services and the projection rebuild both go through these, so the
 * tables can always be rebuilt from the ledger.
 */
import type { dedupClaims, initiatives, milestones, receipts, runCheckpoints, runs, tasks, workstreams } from '@/db/schema';

export type InitiativeRow = typeof initiatives.$inferSelect;
export type WorkstreamRow = typeof workstreams.$inferSelect;
export type MilestoneRow = typeof milestones.$inferSelect;
export type TaskRow = typeof tasks.$inferSelect;
export type ReceiptRow = typeof receipts.$inferSelect;
export type RunRow = typeof runs.$inferSelect;
export type CheckpointRow = typeof runCheckpoints.$inferSelect;
export type ClaimRow = typeof dedupClaims.$inferSelect;

export interface InitiativeRecord {
  id: string;
  title: string;
  summary: string;
  status: InitiativeRow['status'];
  visibility: InitiativeRow['visibility'];
  model_tier: InitiativeRow['modelTier'];
  execution_policy: InitiativeRow['executionPolicy'];
  is_inbox: boolean;
}

export interface WorkstreamRecord {
  id: string;
  initiative_id: string;
  position: number;
  name: string;
  goal: string;
  status: WorkstreamRow['status'];
  domain: string;
  agent_id: string | null;
  depends_on: string[];
}

export interface MilestoneRecord {
  id: string;
  workstream_id: string;
  position: number;
  title: string;
  status: MilestoneRow['status'];
}

export interface TaskRecord {
  id: string;
  initiative_id: string;
  workstream_id: string;
  milestone_id: string;
  position: number;
  title: string;
  description: string | null;
  status: TaskRow['status'];
  priority: TaskRow['priority'];
  type: TaskRow['type'];
  estimate_hours: number | null;
  agent_id: string | null;
  depends_on: string[];
  created_at: string;
  updated_at: string;
}

export interface ReceiptRecord {
  id: string;
  task_id: string;
  status: 'completed';
  summary: string;
  created_at: string;
}

/** Row bookkeeping that comes from the event, not the payload. */
export interface RowMeta {
  workspaceId: string;
  version: number;
  at: Date;
}

export const initiativeRow = (p: InitiativeRecord, m: RowMeta): InitiativeRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  title: p.title,
  summary: p.summary,
  status: p.status,
  visibility: p.visibility,
  modelTier: p.model_tier,
  executionPolicy: p.execution_policy,
  isInbox: p.is_inbox,
  pauseId: null,
  resumeStatus: null,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const workstreamRow = (p: WorkstreamRecord, m: RowMeta): WorkstreamRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  initiativeId: p.initiative_id,
  position: p.position,
  name: p.name,
  goal: p.goal,
  status: p.status,
  domain: p.domain,
  agentId: p.agent_id,
  dependsOn: p.depends_on,
  pauseId: null,
  resumeStatus: null,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const milestoneRow = (p: MilestoneRecord, m: RowMeta): MilestoneRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  workstreamId: p.workstream_id,
  position: p.position,
  title: p.title,
  status: p.status,
  pauseId: null,
  resumeStatus: null,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const taskRecord = (r: TaskRow): TaskRecord => ({
  id: r.id,
  initiative_id: r.initiativeId,
  workstream_id: r.workstreamId,
  milestone_id: r.milestoneId,
  position: r.position,
  title: r.title,
  description: r.description,
  status: r.status,
  priority: r.priority,
  type: r.type,
  estimate_hours: r.estimateHours,
  agent_id: r.agentId,
  depends_on: r.dependsOn,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
});

export const taskRow = (p: TaskRecord, m: RowMeta): TaskRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  initiativeId: p.initiative_id,
  workstreamId: p.workstream_id,
  milestoneId: p.milestone_id,
  position: p.position,
  title: p.title,
  description: p.description,
  status: p.status,
  priority: p.priority,
  type: p.type,
  estimateHours: p.estimate_hours,
  agentId: p.agent_id,
  dependsOn: p.depends_on,
  pauseId: null,
  resumeStatus: null,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const receiptRow = (p: ReceiptRecord, m: Omit<RowMeta, 'version'>): ReceiptRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  taskId: p.task_id,
  status: p.status,
  summary: p.summary,
  createdAt: m.at,
  updatedAt: m.at,
});

export interface RunRecord {
  run_id: string;
  task_id: string;
  agent_id: string | null;
  status: RunRow['status'];
  paused_for_decision_id: string | null;
  pause_id: string | null;
  resume_status: RunRow['resumeStatus'];
  checkpoint_id: string | null;
  summary: string | null;
  created_at: string;
  finished_at: string | null;
}

/** Every run event carries the run as it is after the event, so replay needs no other rule. */
export const runRecord = (r: RunRow): RunRecord => ({
  run_id: r.id,
  task_id: r.taskId,
  agent_id: r.agentId,
  status: r.status,
  paused_for_decision_id: r.pausedForDecisionId,
  pause_id: r.pauseId,
  resume_status: r.resumeStatus,
  checkpoint_id: r.checkpointId,
  summary: r.summary,
  created_at: r.createdAt.toISOString(),
  finished_at: r.finishedAt?.toISOString() ?? null,
});

export const runRow = (p: RunRecord, m: RowMeta): RunRow => ({
  id: p.run_id,
  workspaceId: m.workspaceId,
  taskId: p.task_id,
  agentId: p.agent_id,
  status: p.status,
  pausedForDecisionId: p.paused_for_decision_id,
  pauseId: p.pause_id,
  resumeStatus: p.resume_status,
  checkpointId: p.checkpoint_id,
  summary: p.summary,
  finishedAt: p.finished_at ? new Date(p.finished_at) : null,
  version: m.version,
  createdAt: new Date(p.created_at),
  updatedAt: m.at,
});

export interface CheckpointRecord {
  checkpoint_id: string;
  run_id: string;
  position: number;
  label: string;
  state: Record<string, unknown> | null;
  created_at: string;
}

export const checkpointRecord = (r: CheckpointRow): CheckpointRecord => ({
  checkpoint_id: r.id,
  run_id: r.runId,
  position: r.position,
  label: r.label,
  state: r.state,
  created_at: r.createdAt.toISOString(),
});

export const checkpointRow = (p: CheckpointRecord, workspaceId: string): CheckpointRow => ({
  id: p.checkpoint_id,
  workspaceId,
  runId: p.run_id,
  position: p.position,
  label: p.label,
  state: p.state,
  createdAt: new Date(p.created_at),
});

export interface ClaimRecord {
  claim_id: string;
  fingerprint_hash: string;
  source: string;
  event_key: string;
  initiative_id: string | null;
  active_run_id: string;
  claimed_at: string;
  expires_at: string;
  released_at: string | null;
}

export const claimRecord = (r: ClaimRow): ClaimRecord => ({
  claim_id: r.id,
  fingerprint_hash: r.fingerprintHash,
  source: r.source,
  event_key: r.eventKey,
  initiative_id: r.initiativeId,
  active_run_id: r.activeRunId,
  claimed_at: r.claimedAt.toISOString(),
  expires_at: r.expiresAt.toISOString(),
  released_at: r.releasedAt?.toISOString() ?? null,
});

export const claimRow = (p: ClaimRecord, m: RowMeta): ClaimRow => ({
  id: p.claim_id,
  workspaceId: m.workspaceId,
  fingerprintHash: p.fingerprint_hash,
  source: p.source,
  eventKey: p.event_key,
  initiativeId: p.initiative_id,
  activeRunId: p.active_run_id,
  claimedAt: new Date(p.claimed_at),
  expiresAt: new Date(p.expires_at),
  releasedAt: p.released_at ? new Date(p.released_at) : null,
  version: m.version,
  updatedAt: m.at,
});
