/**
 * An initiative and its tree as the API shows them: workstreams → milestones → tasks, with
 * dependency edges, agent assignments, and estimates summed upward (task → milestone → workstream
 * → tree). Built from rows, whether read from the tables or just planned.
 */
import { and, eq } from 'drizzle-orm';
import type { Executor } from '@/db';
import { initiatives, milestones, tasks, workstreams } from '@/db/schema';
import type { InitiativeRow, MilestoneRow, TaskRow, WorkstreamRow } from '../hierarchy/records';

interface TaskNode {
  id: string;
  title: string;
  status: TaskRow['status'];
  type: TaskRow['type'];
  priority: TaskRow['priority'];
  agent_id: string | null;
  estimate_hours: number | null;
  depends_on: string[];
}

interface MilestoneNode {
  id: string;
  title: string;
  status: MilestoneRow['status'];
  estimate_hours: number;
  tasks: TaskNode[];
}

interface WorkstreamNode {
  id: string;
  name: string;
  goal: string;
  status: WorkstreamRow['status'];
  domain: string;
  agent_id: string | null;
  depends_on: string[];
  estimate_hours: number;
  milestones: MilestoneNode[];
}

export interface TreeView {
  workstreams: WorkstreamNode[];
  edges: { level: 'workstream' | 'task'; from: string; to: string }[];
  agents: { agent_id: string; workstreams: string[]; tasks: string[] }[];
  estimate_hours: number;
}

export interface InitiativeView {
  id: string;
  workspace_id: string;
  title: string;
  status: InitiativeRow['status'];
  summary: string;
  visibility: InitiativeRow['visibility'];
  model_tier: InitiativeRow['modelTier'];
  execution_policy: InitiativeRow['executionPolicy'];
  is_inbox: boolean;
  aggregateVersion: number;
  created_at: string;
  updated_at: string;
}

export function initiativeView(r: InitiativeRow): InitiativeView {
  return {
    id: r.id,
    workspace_id: r.workspaceId,
    title: r.title,
    status: r.status,
    summary: r.summary,
    visibility: r.visibility,
    model_tier: r.modelTier,
    execution_policy: r.executionPolicy,
    is_inbox: r.isInbox,
    aggregateVersion: r.version,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

/** Creation order: when, then the order given among siblings created together, then id. */
const byCreation = <R extends { createdAt: Date; id: string; position?: number }>(a: R, b: R) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.position ?? 0) - (b.position ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function treeView(ws: WorkstreamRow[], ms: MilestoneRow[], ts: TaskRow[]): TreeView {
  const edges: TreeView['edges'] = [];
  const agents = new Map<string, { workstreams: string[]; tasks: string[] }>();
  const agent = (id: string) => {
    let a = agents.get(id);
    if (!a) agents.set(id, (a = { workstreams: [], tasks: [] }));
    return a;
  };
  let total = 0;
  const workstreamNodes = [...ws].sort(byCreation).map((w): WorkstreamNode => {
    if (w.agentId) agent(w.agentId).workstreams.push(w.id);
    for (const dep of w.dependsOn) edges.push({ level: 'workstream', from: dep, to: w.id });
    let wsHours = 0;
    const milestoneNodes = ms
      .filter((m) => m.workstreamId === w.id)
      .sort(byCreation)
      .map((m): MilestoneNode => {
        let msHours = 0;
        const taskNodes = ts
          .filter((t) => t.milestoneId === m.id)
          .sort(byCreation)
          .map((t): TaskNode => {
            msHours += t.estimateHours ?? 0;
            if (t.agentId) agent(t.agentId).tasks.push(t.id);
            for (const dep of t.dependsOn) edges.push({ level: 'task', from: dep, to: t.id });
            return {
              id: t.id,
              title: t.title,
              status: t.status,
              type: t.type,
              priority: t.priority,
              agent_id: t.agentId,
              estimate_hours: t.estimateHours,
              depends_on: t.dependsOn,
            };
          });
        wsHours += msHours;
        return { id: m.id, title: m.title, status: m.status, estimate_hours: msHours, tasks: taskNodes };
      });
    total += wsHours;
    return {
      id: w.id,
      name: w.name,
      goal: w.goal,
      status: w.status,
      domain: w.domain,
      agent_id: w.agentId,
      depends_on: w.dependsOn,
      estimate_hours: wsHours,
      milestones: milestoneNodes,
    };
  });
  return {
    workstreams: workstreamNodes,
    edges,
    agents: [...agents.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([agent_id, v]) => ({ agent_id, ...v })),
    estimate_hours: total,
  };
}

export async function findInitiative(db: Executor, workspaceId: string, id: string): Promise<InitiativeRow | null> {
  const [row] = await db
    .select()
    .from(initiatives)
    .where(and(eq(initiatives.workspaceId, workspaceId), eq(initiatives.id, id)));
  return row ?? null;
}

/** The initiative's tree from the tables (three queries). */
export async function loadTree(db: Executor, workspaceId: string, initiativeId: string): Promise<TreeView> {
  const ws = await db
    .select()
    .from(workstreams)
    .where(and(eq(workstreams.workspaceId, workspaceId), eq(workstreams.initiativeId, initiativeId)));
  const [ms, ts] = await Promise.all([
    ws.length === 0
      ? Promise.resolve([] as MilestoneRow[])
      : db
          .select({ m: milestones })
          .from(milestones)
          .innerJoin(workstreams, eq(workstreams.id, milestones.workstreamId))
          .where(and(eq(milestones.workspaceId, workspaceId), eq(workstreams.initiativeId, initiativeId)))
          .then((rows) => rows.map((r) => r.m)),
    db
      .select()
      .from(tasks)
      .where(and(eq(tasks.workspaceId, workspaceId), eq(tasks.initiativeId, initiativeId))),
  ]);
  return treeView(ws, ms, ts);
}
