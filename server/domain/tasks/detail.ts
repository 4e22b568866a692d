/**
 * GET /tasks/{id}: one task with what an agent needs to act on it: where it sits (initiative,
 * workstream, milestone, with their titles and statuses), its receipt, who holds it (the running
 * run's agent and lease), its runs (newest first, checkpoints counted), the decisions that name it, and its dependencies with their statuses.
 * Six indexed reads, none of them a scan of the workspace.
 */
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '@/db';
import { decisions, initiatives, milestones, receipts, runCheckpoints, runs, tasks, workstreams } from '@/db/schema';
import { taskRecord, type TaskRecord, type TaskRow } from '../hierarchy/records';

export interface TaskDetail {
  task: TaskRecord & { aggregateVersion: number };
  placement: {
    initiative: { id: string; title: string; status: string; is_inbox: boolean };
    workstream: { id: string; name: string; status: string };
    milestone: { id: string; title: string; status: string };
  };
  receipt: { id: string; status: string; summary: string; created_at: string } | null;
  /** Who holds the task now: its running run's agent, until when (null when no run holds a lease). */
  holder: { runId: string; agent_id: string | null; fence: number; lease_expires_at: string } | null;
  runs: {
    runId: string;
    status: string;
    agent_id: string | null;
    fence: number;
    lease_expires_at: string | null;
    failure_reason: 'lease_expired' | null;
    checkpoints: number;
    created_at: string;
    updated_at: string;
    finished_at: string | null;
  }[];
  decisions: { id: string; title: string; status: string; urgency: string; blocks_task: boolean; created_at: string }[];
  dependencies: { id: string; title: string; status: TaskRow['status'] }[];
}

export async function taskDetail(db: Executor, workspaceId: string, taskId: string): Promise<TaskDetail | null> {
  const [row] = await db
    .select({ task: tasks, initiative: initiatives, workstream: workstreams, milestone: milestones })
    .from(tasks)
    .innerJoin(initiatives, eq(initiatives.id, tasks.initiativeId))
    .innerJoin(workstreams, eq(workstreams.id, tasks.workstreamId))
    .innerJoin(milestones, eq(milestones.id, tasks.milestoneId))
    .where(and(eq(tasks.id, taskId), eq(tasks.workspaceId, workspaceId)));
  if (!row) return null;
  const { task } = row;
  const [receipt] = await db.select().from(receipts).where(eq(receipts.taskId, task.id)).orderBy(asc(receipts.createdAt)).limit(1);
  // Newest first: by fence, the order the task's runs were made in (runs_task_fence_idx).
  const runRows = await db.select().from(runs).where(eq(runs.taskId, task.id)).orderBy(desc(runs.fence));
  const counted = runRows.length
    ? await db
        .select({ runId: runCheckpoints.runId, n: sql<number>`count(*)::int` })
        .from(runCheckpoints)
        .where(
          inArray(
            runCheckpoints.runId,
            runRows.map((r) => r.id),
          ),
        )
        .groupBy(runCheckpoints.runId)
    : [];
  const checkpointsOf = new Map(counted.map((c) => [c.runId, Number(c.n)]));
  const named = await db
    .select()
    .from(decisions)
    .where(and(eq(decisions.taskId, task.id), eq(decisions.workspaceId, workspaceId)))
    .orderBy(desc(decisions.createdAt), desc(decisions.id));
  const deps = task.dependsOn.length
    ? await db
        .select({ id: tasks.id, title: tasks.title, status: tasks.status })
        .from(tasks)
        .where(and(inArray(tasks.id, task.dependsOn), eq(tasks.workspaceId, workspaceId)))
    : [];
  const depOrder = new Map(task.dependsOn.map((id, i) => [id, i]));
  const holding = runRows.find((r) => r.status === 'running' && r.leaseExpiresAt !== null);
  return {
    task: { ...taskRecord(task), aggregateVersion: task.version },
    placement: {
      initiative: { id: row.initiative.id, title: row.initiative.title, status: row.initiative.status, is_inbox: row.initiative.isInbox },
      workstream: { id: row.workstream.id, name: row.workstream.name, status: row.workstream.status },
      milestone: { id: row.milestone.id, title: row.milestone.title, status: row.milestone.status },
    },
    receipt: receipt
      ? { id: receipt.id, status: receipt.status, summary: receipt.summary, created_at: receipt.createdAt.toISOString() }
      : null,
    holder: holding
      ? { runId: holding.id, agent_id: holding.agentId, fence: holding.fence, lease_expires_at: holding.leaseExpiresAt!.toISOString() }
      : null,
    runs: runRows.map((run) => ({
      runId: run.id,
      status: run.status,
      agent_id: run.agentId,
      fence: run.fence,
      lease_expires_at: run.leaseExpiresAt?.toISOString() ?? null,
      failure_reason: run.failureReason,
      checkpoints: checkpointsOf.get(run.id) ?? 0,
      created_at: run.createdAt.toISOString(),
      updated_at: run.updatedAt.toISOString(),
      finished_at: run.finishedAt?.toISOString() ?? null,
    })),
    decisions: named.map((d) => ({
      id: d.id,
      title: d.title,
      status: d.status,
      urgency: d.urgency,
      blocks_task: d.blocksTask,
      created_at: d.createdAt.toISOString(),
    })),
    dependencies: deps.sort((a, b) => depOrder.get(a.id)! - depOrder.get(b.id)!),
  };
}
