/**
 * The work hierarchy's records: how each row is written into its ledger event's payload, and how a
 * payload becomes a row again. Services and the projection rebuild both go through these, so the
 * tables can always be rebuilt from the ledger. Each record is a zod schema: the replay
 * (server/domain/hierarchy/events.ts) parses payloads with it, and its type is what services write.
 */
import { z } from 'zod';
import {
  initiatives,
  runStatuses,
  taskPriorities,
  taskStatuses,
  taskTypes,
  nodeStatuses,
  type dedupClaims,
  type milestones,
  type receipts,
  type runCheckpoints,
  type runs,
  type tasks,
  type workstreams,
} from '@/db/schema';
import type { RowMeta } from '../projection';

export type InitiativeRow = typeof initiatives.$inferSelect;
export type WorkstreamRow = typeof workstreams.$inferSelect;
export type MilestoneRow = typeof milestones.$inferSelect;
export type TaskRow = typeof tasks.$inferSelect;
export type ReceiptRow = typeof receipts.$inferSelect;
export type RunRow = typeof runs.$inferSelect;
export type CheckpointRow = typeof runCheckpoints.$inferSelect;
export type ClaimRow = typeof dedupClaims.$inferSelect;

/*
 * The ledger keeps every payload it was ever given, and replays them all. Fields that records of
 * the first versions did not carry (the Inbox's nodes, POST /work's task, nodes created before
 * siblings kept their order) default to what the migration that added the column gave the rows
 * that existed then, so an old event replays into the row the table holds.
 */
const position = z.number().default(0);
const dependsOn = z.array(z.string()).default(() => []);

export const initiativeRecordSchema = z.object({
  id: z.string(),
  title: z.string(),
  summary: z.string().default(''),
  status: z.enum(nodeStatuses),
  visibility: z.enum(initiatives.visibility.enumValues),
  model_tier: z.enum(initiatives.modelTier.enumValues),
  // Kept whole in its column: whatever else it carries stays.
  execution_policy: z.looseObject({ mode: z.enum(['sequential', 'parallel', 'manual']), max_concurrent_agents: z.number() }),
  is_inbox: z.boolean(),
});
export type InitiativeRecord = z.output<typeof initiativeRecordSchema>;

export const workstreamRecordSchema = z.object({
  id: z.string(),
  initiative_id: z.string(),
  position,
  name: z.string(),
  goal: z.string().default(''),
  status: z.enum(nodeStatuses),
  domain: z.string().default('general'),
  agent_id: z.string().nullable().default(null),
  depends_on: dependsOn,
});
export type WorkstreamRecord = z.output<typeof workstreamRecordSchema>;

export const milestoneRecordSchema = z.object({
  id: z.string(),
  workstream_id: z.string(),
  position,
  title: z.string(),
  status: z.enum(nodeStatuses),
});
export type MilestoneRecord = z.output<typeof milestoneRecordSchema>;

export const taskRecordSchema = z.object({
  id: z.string(),
  initiative_id: z.string(),
  workstream_id: z.string(),
  milestone_id: z.string(),
  position,
  title: z.string(),
  description: z.string().nullable(),
  status: z.enum(taskStatuses),
  priority: z.enum(taskPriorities),
  type: z.enum(taskTypes).default('build'),
  estimate_hours: z.number().nullable(),
  agent_id: z.string().nullable().default(null),
  depends_on: dependsOn,
  created_at: z.string(),
  updated_at: z.string(),
});
export type TaskRecord = z.output<typeof taskRecordSchema>;

export const receiptRecordSchema = z.object({
  id: z.string(),
  task_id: z.string(),
  status: z.literal('completed'),
  summary: z.string(),
  created_at: z.string(),
});
export type ReceiptRecord = z.output<typeof receiptRecordSchema>;

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

export const runRecordSchema = z.object({
  run_id: z.string(),
  task_id: z.string(),
  agent_id: z.string().nullable(),
  status: z.enum(runStatuses),
  paused_for_decision_id: z.string().nullable(),
  pause_id: z.string().nullable(),
  resume_status: z.enum(runStatuses).nullable(),
  checkpoint_id: z.string().nullable(),
  summary: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  // Runs from before leases: their fence is their place among the task's runs, which the
  // replay counts (server/domain/runs/events.ts); they held no lease.
  fence: z.int().optional(),
  lease_seconds: z.int().default(300),
  lease_expires_at: z.string().nullable().default(null),
  failure_reason: z.enum(['lease_expired']).nullable().default(null),
  // Runs from before artifacts named none.
  artifact_ids: z.array(z.string()).default([]),
});
export type RunRecord = z.output<typeof runRecordSchema>;

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
  fence: r.fence,
  lease_seconds: r.leaseSeconds,
  lease_expires_at: r.leaseExpiresAt?.toISOString() ?? null,
  failure_reason: r.failureReason,
  artifact_ids: r.artifactIds,
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
  // 0 only until the replay sets it (a run.created from before fences: server/domain/runs/events.ts).
  fence: p.fence ?? 0,
  leaseSeconds: p.lease_seconds,
  leaseExpiresAt: p.lease_expires_at ? new Date(p.lease_expires_at) : null,
  failureReason: p.failure_reason,
  artifactIds: p.artifact_ids,
  version: m.version,
  createdAt: new Date(p.created_at),
  updatedAt: m.at,
});

export const checkpointRecordSchema = z.object({
  checkpoint_id: z.string(),
  run_id: z.string(),
  position: z.number(),
  label: z.string(),
  state: z.record(z.string(), z.unknown()).nullable(),
  created_at: z.string(),
});
export type CheckpointRecord = z.output<typeof checkpointRecordSchema>;

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

export const claimRecordSchema = z.object({
  claim_id: z.string(),
  fingerprint_hash: z.string(),
  source: z.string(),
  event_key: z.string(),
  initiative_id: z.string().nullable(),
  active_run_id: z.string(),
  claimed_at: z.string(),
  expires_at: z.string(),
  released_at: z.string().nullable(),
});
export type ClaimRecord = z.output<typeof claimRecordSchema>;

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
