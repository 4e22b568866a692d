/**
 * Turning a requested initiative tree into rows: ids for every node, `depends_on` refs resolved
 * among siblings, and every rule checked before anything is written (unknown or repeated refs,
 * self-dependencies and cycles, reported with their path).
 */
import { randomUUID } from 'node:crypto';
import type { TaskPriority } from '@/db/schema';
import { AppError } from '@/server/errors';
import type { InitiativeRecord, MilestoneRecord, TaskRecord, WorkstreamRecord } from '../hierarchy/records';

export interface TaskInput {
  ref?: string;
  title: string;
  description?: string;
  type: TaskRecord['type'];
  priority: TaskPriority;
  estimate_hours?: number;
  agent_id?: string;
  depends_on?: string[];
}

interface MilestoneInput {
  ref?: string;
  title: string;
  tasks?: TaskInput[];
}

export interface WorkstreamInput {
  ref?: string;
  name: string;
  goal?: string;
  domain?: string;
  agent_id?: string;
  depends_on?: string[];
  milestones?: MilestoneInput[];
}

export interface InitiativeInput {
  title: string;
  summary?: string;
  visibility: InitiativeRecord['visibility'];
  model_tier: InitiativeRecord['model_tier'];
  execution_policy: InitiativeRecord['execution_policy'];
  workstreams?: WorkstreamInput[];
}

export interface TreePlan {
  initiative: InitiativeRecord;
  workstreams: WorkstreamRecord[];
  milestones: MilestoneRecord[];
  tasks: TaskRecord[];
  /** Client ref → id, for every node that had a ref. */
  refs: Record<string, string>;
}

interface Issue {
  path: string;
  message: string;
}

/** Nodes a single request may create (the body limit allows more; the transaction should not). */
export const MAX_TREE_NODES = 2000;

export function planTree(
  input: InitiativeInput,
  opts: { at: Date; isInbox?: boolean; newId?: () => string } = { at: new Date() },
): TreePlan {
  const newId = opts.newId ?? randomUUID;
  const issues: Issue[] = [];
  const refs: Record<string, string> = {};
  const refPaths = new Map<string, string>();
  const claimRef = (ref: string | undefined, id: string, path: string) => {
    if (ref === undefined) return;
    // Looked up in the Map, not in `refs`: `refs.constructor` or `refs.toString` exist on every
    // object, so refs with those names were refused as "already used". `refs` is answered as a JSON
    // object, which cannot carry a `__proto__` key as data (assignment replaces its prototype), so
    // that one ref name is refused rather than silently left out.
    if (ref === '__proto__') issues.push({ path: `${path}.ref`, message: 'the ref __proto__ is reserved; choose another name' });
    else if (refPaths.has(ref)) issues.push({ path: `${path}.ref`, message: `ref ${ref} is already used at ${refPaths.get(ref)}` });
    else {
      refs[ref] = id;
      refPaths.set(ref, path);
    }
  };

  const at = opts.at.toISOString();
  const initiative: InitiativeRecord = {
    id: newId(),
    title: input.title,
    summary: input.summary ?? '',
    status: 'active',
    visibility: input.visibility,
    model_tier: input.model_tier,
    execution_policy: input.execution_policy,
    is_inbox: opts.isInbox ?? false,
  };
  const workstreams: WorkstreamRecord[] = [];
  const milestones: MilestoneRecord[] = [];
  const tasks: TaskRecord[] = [];
  // Sibling groups whose depends_on refs resolve among themselves: [path of each node, its refs, its own ref].
  const groups: {
    paths: string[];
    own: (string | undefined)[];
    deps: string[][];
    ids: string[];
    set: (i: number, ids: string[]) => void;
  }[] = [];

  const wsGroup = {
    paths: [] as string[],
    own: [] as (string | undefined)[],
    deps: [] as string[][],
    ids: [] as string[],
    set: (i: number, ids: string[]) => (workstreams[i]!.depends_on = ids),
  };
  (input.workstreams ?? []).forEach((ws, wi) => {
    const wsPath = `workstreams.${wi}`;
    const ws_: WorkstreamRecord = {
      id: newId(),
      initiative_id: initiative.id,
      position: wi,
      name: ws.name,
      goal: ws.goal ?? '',
      status: 'active',
      domain: ws.domain ?? 'general',
      agent_id: ws.agent_id ?? null,
      depends_on: [],
    };
    claimRef(ws.ref, ws_.id, wsPath);
    workstreams.push(ws_);
    wsGroup.paths.push(wsPath);
    wsGroup.own.push(ws.ref);
    wsGroup.deps.push(ws.depends_on ?? []);
    wsGroup.ids.push(ws_.id);

    (ws.milestones ?? []).forEach((ms, mi) => {
      const msPath = `${wsPath}.milestones.${mi}`;
      const ms_: MilestoneRecord = { id: newId(), workstream_id: ws_.id, position: mi, title: ms.title, status: 'active' };
      claimRef(ms.ref, ms_.id, msPath);
      milestones.push(ms_);
      const first = tasks.length;
      const taskGroup = {
        paths: [] as string[],
        own: [] as (string | undefined)[],
        deps: [] as string[][],
        ids: [] as string[],
        set: (i: number, ids: string[]) => (tasks[first + i]!.depends_on = ids),
      };
      (ms.tasks ?? []).forEach((t, ti) => {
        const tPath = `${msPath}.tasks.${ti}`;
        const task: TaskRecord = {
          id: newId(),
          initiative_id: initiative.id,
          workstream_id: ws_.id,
          milestone_id: ms_.id,
          position: ti,
          title: t.title,
          description: t.description ?? null,
          status: 'todo',
          priority: t.priority,
          type: t.type,
          estimate_hours: t.estimate_hours ?? null,
          agent_id: t.agent_id ?? null,
          depends_on: [],
          created_at: at,
          updated_at: at,
        };
        claimRef(t.ref, task.id, tPath);
        tasks.push(task);
        taskGroup.paths.push(tPath);
        taskGroup.own.push(t.ref);
        taskGroup.deps.push(t.depends_on ?? []);
        taskGroup.ids.push(task.id);
      });
      groups.push(taskGroup);
    });
  });
  groups.unshift(wsGroup);

  const nodes = 1 + workstreams.length + milestones.length + tasks.length;
  if (nodes > MAX_TREE_NODES)
    issues.push({ path: 'workstreams', message: `a tree may create at most ${MAX_TREE_NODES} nodes (this one: ${nodes})` });

  for (const group of groups) resolveGroup(group, issues);
  if (issues.length > 0) {
    const cycle = issues.find((i) => i.message.startsWith('dependency cycle'));
    throw new AppError('validation_failed', cycle ? `${cycle.path}: ${cycle.message}` : 'The tree is not valid.', { issues });
  }
  return { initiative, workstreams, milestones, tasks, refs };
}

/** Resolves a sibling group's depends_on refs to ids and refuses unknown refs, self-dependencies and cycles. */
function resolveGroup(
  g: { paths: string[]; own: (string | undefined)[]; deps: string[][]; ids: string[]; set: (i: number, ids: string[]) => void },
  issues: Issue[],
): void {
  const index = new Map<string, number>();
  g.own.forEach((ref, i) => {
    if (ref !== undefined) index.set(ref, i);
  });
  const edges: number[][] = g.deps.map(() => []);
  g.deps.forEach((deps, i) => {
    const seen = new Set<string>();
    deps.forEach((ref, di) => {
      const at = `${g.paths[i]}.depends_on.${di}`;
      const target = index.get(ref);
      if (target === undefined) issues.push({ path: at, message: `unknown ref ${ref}: depends_on names a sibling by its ref` });
      else if (target === i) issues.push({ path: at, message: `${ref} cannot depend on itself` });
      else if (seen.has(ref)) issues.push({ path: at, message: `${ref} is listed twice` });
      else edges[i]!.push(target);
      seen.add(ref);
    });
  });
  const cycle = findCycle(edges);
  if (cycle) {
    const names = cycle.map((i) => g.own[i] ?? g.paths[i]);
    issues.push({ path: `${g.paths[cycle[0]!]}.depends_on`, message: `dependency cycle: ${names.join(' → ')}` });
    return;
  }
  edges.forEach((targets, i) =>
    g.set(
      i,
      targets.map((t) => g.ids[t]!),
    ),
  );
}

/** A cycle in the graph as node indexes (first node repeated at the end), or null. Iterative DFS. */
export function findCycle(edges: number[][]): number[] | null {
  const state = new Array<0 | 1 | 2>(edges.length).fill(0); // 0 new, 1 on stack, 2 done
  for (let start = 0; start < edges.length; start++) {
    if (state[start] !== 0) continue;
    const stack: { node: number; next: number }[] = [{ node: start, next: 0 }];
    const path: number[] = [start];
    state[start] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const targets = edges[top.node]!;
      if (top.next < targets.length) {
        const target = targets[top.next++]!;
        if (state[target] === 1) return [...path.slice(path.indexOf(target)), target];
        if (state[target] === 0) {
          state[target] = 1;
          stack.push({ node: target, next: 0 });
          path.push(target);
        }
      } else {
        state[top.node] = 2;
        stack.pop();
        path.pop();
      }
    }
  }
  return null;
}
