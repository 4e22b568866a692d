/**
 * The work hierarchy's records: how each row is written into its ledger event's payload, and how a
 * payload becomes a row again. Services and the projection rebuild both go through these, so the
 * tables can always be rebuilt from the ledger.
 */
import type { initiatives, milestones, receipts, tasks, workstreams } from '@/db/schema';

export type InitiativeRow = typeof initiatives.$inferSelect;
export type WorkstreamRow = typeof workstreams.$inferSelect;
export type MilestoneRow = typeof milestones.$inferSelect;
export type TaskRow = typeof tasks.$inferSelect;
export type ReceiptRow = typeof receipts.$inferSelect;

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

export const initiativeRecord = (r: InitiativeRow): InitiativeRecord => ({
  id: r.id,
  title: r.title,
  summary: r.summary,
  status: r.status,
  visibility: r.visibility,
  model_tier: r.modelTier,
  execution_policy: r.executionPolicy,
  is_inbox: r.isInbox,
});

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
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const workstreamRecord = (r: WorkstreamRow): WorkstreamRecord => ({
  id: r.id,
  initiative_id: r.initiativeId,
  position: r.position,
  name: r.name,
  goal: r.goal,
  status: r.status,
  domain: r.domain,
  agent_id: r.agentId,
  depends_on: r.dependsOn,
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
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const milestoneRecord = (r: MilestoneRow): MilestoneRecord => ({
  id: r.id,
  workstream_id: r.workstreamId,
  position: r.position,
  title: r.title,
  status: r.status,
});

export const milestoneRow = (p: MilestoneRecord, m: RowMeta): MilestoneRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  workstreamId: p.workstream_id,
  position: p.position,
  title: p.title,
  status: p.status,
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
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
});

export const receiptRecord = (r: ReceiptRow): ReceiptRecord => ({
  id: r.id,
  task_id: r.taskId,
  status: 'completed',
  summary: r.summary,
  created_at: r.createdAt.toISOString(),
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
