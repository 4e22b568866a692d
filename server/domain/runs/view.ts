/**
 * A run as the API shows it: the row with its checkpoints, oldest first.
 */
import { and, asc, eq } from 'drizzle-orm';
import type { Executor } from '@/db';
import { runCheckpoints, runs } from '@/db/schema';
import type { CheckpointRow, RunRow } from '../hierarchy/records';

export interface RunView {
  runId: string;
  status: RunRow['status'];
  workspace_id: string;
  task_id: string;
  agent_id: string | null;
  paused_for_decision_id: string | null;
  checkpoint_id: string | null;
  summary: string | null;
  aggregateVersion: number;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  fence: number;
  lease_seconds: number;
  lease_expires_at: string | null;
  failure_reason: RunRow['failureReason'];
  artifact_ids: string[];
  checkpoints: CheckpointView[];
}

export interface CheckpointView {
  checkpointId: string;
  runId: string;
  position: number;
  label: string;
  state: Record<string, unknown> | null;
  created_at: string;
}

export const checkpointView = (c: CheckpointRow): CheckpointView => ({
  checkpointId: c.id,
  runId: c.runId,
  position: c.position,
  label: c.label,
  state: c.state,
  created_at: c.createdAt.toISOString(),
});

export function runView(run: RunRow, checkpoints: CheckpointRow[]): RunView {
  return {
    runId: run.id,
    status: run.status,
    workspace_id: run.workspaceId,
    task_id: run.taskId,
    agent_id: run.agentId,
    paused_for_decision_id: run.pausedForDecisionId,
    checkpoint_id: run.checkpointId,
    summary: run.summary,
    aggregateVersion: run.version,
    created_at: run.createdAt.toISOString(),
    updated_at: run.updatedAt.toISOString(),
    finished_at: run.finishedAt?.toISOString() ?? null,
    fence: run.fence,
    lease_seconds: run.leaseSeconds,
    lease_expires_at: run.leaseExpiresAt?.toISOString() ?? null,
    failure_reason: run.failureReason,
    artifact_ids: run.artifactIds,
    checkpoints: checkpoints.map(checkpointView),
  };
}

export async function findRun(db: Executor, workspaceId: string, runId: string): Promise<RunRow | undefined> {
  const [run] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.id, runId), eq(runs.workspaceId, workspaceId)));
  return run;
}

export async function loadRunView(db: Executor, workspaceId: string, runId: string): Promise<RunView | undefined> {
  const run = await findRun(db, workspaceId, runId);
  if (!run) return undefined;
  const checkpoints = await db.select().from(runCheckpoints).where(eq(runCheckpoints.runId, runId)).orderBy(asc(runCheckpoints.position));
  return runView(run, checkpoints);
}
