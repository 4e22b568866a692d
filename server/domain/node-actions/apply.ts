/**
 * A node action (POST /lifecycle): load the node and its subtree under the workspace's ledger lock, plan the
 * action (plan.ts), and either show the plan (dry run) or write it: one transaction, one ledger
 * event per changed node, new runs for re-dispatched tasks, and the pending decisions of cancelled
 * runs cancelled with them.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq, inArray, type SQL } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisions, initiatives, milestones, runs, tasks, workstreams } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { runRecord, type RunRow } from '../hierarchy/records';
import { cancelDecisionsOfRuns } from '../decisions/cancel-with-run';
import { nextFences } from '../runs/lease';
import { newRun } from '../runs/runs';
import { planNodeAction, type NodeAction, type Plan, type PlanNode, type Subject } from './plan';
import { writeStatusChanges, type Level } from '../status-changes';

export interface NodeActionInput {
  level: Level;
  id: string;
  action: NodeAction;
  reason?: string;
  dry_run: boolean;
}

export interface NodeActionResult {
  affected: { nodes: number; runsPaused: number; runsCancelled: number; redispatched: number };
  changes: { level: Level; id: string; from: string; to: string }[];
  redispatched_tasks: string[];
  runs_started: string[];
  decisions_cancelled: string[];
  message: string;
}

type Row = { id: string; status: string; pauseId: string | null; resumeStatus: string | null };
const node = (level: Level, r: Row, parentId: string | null, extra: Partial<PlanNode> = {}): PlanNode => ({
  level,
  id: r.id,
  status: r.status,
  pauseId: r.pauseId,
  resumeStatus: r.resumeStatus,
  parentId,
  ...extra,
});
const runNode = (r: RunRow): PlanNode => node('run', r, r.taskId, { run: r });

/** The node, the nodes above it and its subtree; 404 when it is not in the workspace. */
async function loadSubject(tx: Tx, workspaceId: string, level: Level, id: string): Promise<Subject> {
  const missing = () => new AppError('not_found', `No ${level} with that id in your workspace.`, { fields: ['id'] });
  const one = async <T>(rows: Promise<T[]>) => (await rows)[0];
  const ancestorsOf = async (milestoneId: string | null, workstreamId: string | null, initiativeId: string): Promise<PlanNode[]> => {
    const out: PlanNode[] = [];
    if (milestoneId) {
      const m = (await one(tx.select().from(milestones).where(eq(milestones.id, milestoneId))))!;
      out.push(node('milestone', m, m.workstreamId));
    }
    if (workstreamId) {
      const w = (await one(tx.select().from(workstreams).where(eq(workstreams.id, workstreamId))))!;
      out.push(node('workstream', w, w.initiativeId));
    }
    const i = (await one(tx.select().from(initiatives).where(eq(initiatives.id, initiativeId))))!;
    out.push(node('initiative', i, null));
    return out;
  };
  const below = async (scope: { ws?: SQL; ms?: SQL; task: SQL }): Promise<PlanNode[]> => {
    const out: PlanNode[] = [];
    if (scope.ws) {
      const rows = await tx.select().from(workstreams).where(scope.ws).orderBy(asc(workstreams.position), asc(workstreams.id));
      out.push(...rows.map((w) => node('workstream', w, w.initiativeId)));
    }
    if (scope.ms) {
      const rows = await tx
        .select({ m: milestones })
        .from(milestones)
        .innerJoin(workstreams, eq(workstreams.id, milestones.workstreamId))
        .where(scope.ms)
        .orderBy(asc(milestones.position), asc(milestones.id));
      out.push(...rows.map(({ m }) => node('milestone', m, m.workstreamId)));
    }
    const taskRows = await tx.select().from(tasks).where(scope.task).orderBy(asc(tasks.position), asc(tasks.id));
    out.push(...taskRows.map((t) => node('task', t, t.milestoneId, { agentId: t.agentId })));
    const runRows = await tx
      .select({ r: runs })
      .from(runs)
      .innerJoin(tasks, eq(tasks.id, runs.taskId))
      .where(scope.task)
      .orderBy(desc(runs.createdAt), asc(runs.id));
    out.push(...runRows.map(({ r }) => runNode(r)));
    return out;
  };

  switch (level) {
    case 'initiative': {
      const i = await one(
        tx
          .select()
          .from(initiatives)
          .where(and(eq(initiatives.id, id), eq(initiatives.workspaceId, workspaceId))),
      );
      if (!i) throw missing();
      return {
        root: node('initiative', i, null),
        ancestors: [],
        descendants: await below({
          ws: eq(workstreams.initiativeId, id),
          ms: eq(workstreams.initiativeId, id),
          task: eq(tasks.initiativeId, id),
        }),
      };
    }
    case 'workstream': {
      const w = await one(
        tx
          .select()
          .from(workstreams)
          .where(and(eq(workstreams.id, id), eq(workstreams.workspaceId, workspaceId))),
      );
      if (!w) throw missing();
      return {
        root: node('workstream', w, w.initiativeId),
        ancestors: await ancestorsOf(null, null, w.initiativeId),
        descendants: await below({ ms: eq(milestones.workstreamId, id), task: eq(tasks.workstreamId, id) }),
      };
    }
    case 'milestone': {
      const m = await one(
        tx
          .select({ m: milestones, initiativeId: workstreams.initiativeId })
          .from(milestones)
          .innerJoin(workstreams, eq(workstreams.id, milestones.workstreamId))
          .where(and(eq(milestones.id, id), eq(milestones.workspaceId, workspaceId))),
      );
      if (!m) throw missing();
      return {
        root: node('milestone', m.m, m.m.workstreamId),
        ancestors: await ancestorsOf(null, m.m.workstreamId, m.initiativeId),
        descendants: await below({ task: eq(tasks.milestoneId, id) }),
      };
    }
    case 'task': {
      const t = await one(
        tx
          .select()
          .from(tasks)
          .where(and(eq(tasks.id, id), eq(tasks.workspaceId, workspaceId))),
      );
      if (!t) throw missing();
      const descendants = (await tx.select().from(runs).where(eq(runs.taskId, id)).orderBy(desc(runs.createdAt), asc(runs.id))).map(
        runNode,
      );
      return {
        root: node('task', t, t.milestoneId, { agentId: t.agentId }),
        ancestors: await ancestorsOf(t.milestoneId, t.workstreamId, t.initiativeId),
        descendants,
      };
    }
    case 'run': {
      const r = await one(
        tx
          .select()
          .from(runs)
          .where(and(eq(runs.id, id), eq(runs.workspaceId, workspaceId))),
      );
      if (!r) throw missing();
      const t = (await one(tx.select().from(tasks).where(eq(tasks.id, r.taskId))))!;
      const siblings = await tx.select().from(runs).where(eq(runs.taskId, t.id));
      return {
        root: runNode(r),
        ancestors: [
          node('task', t, t.milestoneId, { agentId: t.agentId }),
          ...(await ancestorsOf(t.milestoneId, t.workstreamId, t.initiativeId)),
        ],
        descendants: [],
        siblingRuns: siblings.filter((s) => s.id !== r.id).map(runNode),
      };
    }
  }
}

function summarize(plan: Plan): Pick<NodeActionResult, 'affected' | 'changes' | 'redispatched_tasks'> {
  const runChanges = plan.changes.filter((c) => c.level === 'run');
  return {
    affected: {
      nodes: plan.changes.length,
      runsPaused: runChanges.filter((c) => c.to === 'paused').length,
      runsCancelled: runChanges.filter((c) => c.to === 'cancelled').length,
      redispatched: plan.redispatch.length,
    },
    changes: plan.changes.map(({ level, id, from, to }) => ({ level, id, from, to })),
    redispatched_tasks: plan.redispatch.map((r) => r.taskId),
  };
}

export async function applyNodeAction(tx: Tx, actor: Actor, input: NodeActionInput): Promise<NodeActionResult> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const subject = await loadSubject(tx, actor.workspaceId, input.level, input.id);
  const lifecycleId = randomUUID();
  const plan = planNodeAction(input.action, subject, lifecycleId);
  const summary = summarize(plan);
  const cancelledRuns = plan.changes.filter((c) => c.level === 'run' && c.to === 'cancelled').map((c) => c.id);
  if (input.dry_run) {
    // What the real action would cancel with those runs, read without locking or writing.
    const pending =
      cancelledRuns.length === 0
        ? []
        : await tx
            .select({ id: decisions.id })
            .from(decisions)
            .where(
              and(eq(decisions.workspaceId, actor.workspaceId), eq(decisions.status, 'pending'), inArray(decisions.runId, cancelledRuns)),
            );
    return {
      ...summary,
      runs_started: [],
      decisions_cancelled: pending.map((d) => d.id),
      message: `Dry run: ${plan.message} Nothing was changed.`,
    };
  }

  const now = new Date();
  const cause = { lifecycle_id: lifecycleId, action: input.action, level: input.level, target_id: input.id, reason: input.reason ?? null };
  const events: NewEvent[] = await writeStatusChanges(tx, actor.workspaceId, plan.changes, now, cause);
  const fences = await nextFences(
    tx,
    plan.redispatch.map((r) => r.taskId),
  );
  const started: RunRow[] = plan.redispatch.map((r) =>
    newRun({
      workspaceId: actor.workspaceId,
      taskId: r.taskId,
      agentId: r.agentId,
      status: 'queued',
      at: now,
      fence: fences.get(r.taskId)!,
    }),
  );
  if (started.length > 0) await tx.insert(runs).values(started);
  for (const run of started) {
    events.push({ aggregateType: 'run', aggregateId: run.id, eventType: 'run.created', payload: { ...runRecord(run), ...cause } });
  }
  const decisionEvents = await cancelDecisionsOfRuns(tx, actor.workspaceId, cancelledRuns, now);
  events.push(...decisionEvents);
  await appendEvents(tx, actor, events, now);
  return {
    ...summary,
    runs_started: started.map((r) => r.id),
    decisions_cancelled: decisionEvents.map((e) => e.aggregateId),
    message: plan.message,
  };
}
