/**
 * Node actions (the API's lifecycle actions, POST /lifecycle) planned as pure functions over a
 * loaded subtree (docs/contract.md §4.6):
 *
 * - `pause` pauses the node and its active descendants, and their queued or running runs, all
 *   marked with one pause id and the status each had;
 * - `resume` restores exactly the nodes marked with the node's pause id (nodes paused on their
 *   own before, or runs held by a decision, stay as they are); refused while an ancestor is paused;
 * - `cancel` cancels the node, its open descendants and their open runs;
 * - `retry` sets failed or cancelled tasks under the node back to `todo` and starts a new run for
 *   each (reopening the node and containers below it if they were cancelled).
 *
 * A plan is what `dry_run` shows and what the service writes, so the two cannot disagree.
 */
import { AppError } from '@/server/errors';
import type { RunRow } from '../hierarchy/records';
import { followTask } from '../runs/hierarchy';
import type { Level, StatusChange, StatusEventType } from '../status-changes';
import { plural } from '@/server/words';

export const NODE_ACTIONS = ['pause', 'resume', 'retry', 'cancel'] as const;
export type NodeAction = (typeof NODE_ACTIONS)[number];

export interface PlanNode {
  level: Level;
  id: string;
  status: string;
  pauseId: string | null;
  resumeStatus: string | null;
  /** The node above it (for a run: its task). */
  parentId: string | null;
  /** Tasks: the assigned agent. */
  agentId?: string | null;
  /** Runs: the row (run events carry the whole run). */
  run?: RunRow;
}

export interface Subject {
  root: PlanNode;
  /** Nodes above the root, nearest first. */
  ancestors: PlanNode[];
  /** Nodes below the root, parents before children (runs last). */
  descendants: PlanNode[];
  /** Run level only: the other runs of its task. */
  siblingRuns?: PlanNode[];
}

interface Redispatch {
  taskId: string;
  agentId: string | null;
}

export interface Plan {
  changes: StatusChange[];
  redispatch: Redispatch[];
  message: string;
}

const ACTIVE: Record<'container' | 'task' | 'run', readonly string[]> = {
  container: ['active'],
  task: ['todo', 'in_progress', 'blocked'],
  run: ['queued', 'running'],
};
const OPEN: Record<'container' | 'task' | 'run', readonly string[]> = {
  container: ['active', 'paused'],
  task: ['todo', 'in_progress', 'blocked', 'paused'],
  run: ['queued', 'running', 'paused'],
};
/** Finished for good: neither cancel nor anything else applies. */
const DONE: Record<'container' | 'task' | 'run', readonly string[]> = {
  container: ['completed'],
  task: ['done'],
  run: ['completed', 'failed'],
};
const kind = (n: PlanNode) => (n.level === 'task' || n.level === 'run' ? n.level : 'container');
const isActive = (n: PlanNode) => ACTIVE[kind(n)].includes(n.status);
const isOpen = (n: PlanNode) => OPEN[kind(n)].includes(n.status);
const isDone = (n: PlanNode) => DONE[kind(n)].includes(n.status);
const name = (n: PlanNode) => `${n.level} ${n.id}`;

function fail(message: string, node: PlanNode): never {
  throw new AppError('lifecycle_action_failed', message, { level: node.level, id: node.id, status: node.status });
}

function change(
  n: PlanNode,
  to: string,
  eventType: StatusEventType,
  pause: { pauseId: string | null; resumeStatus: string | null },
): StatusChange {
  return {
    level: n.level,
    id: n.id,
    from: n.status,
    to,
    eventType,
    ...pause,
    ...(n.run ? { run: n.run, pausedForDecisionId: to === 'paused' ? n.run.pausedForDecisionId : null } : {}),
  };
}
const CLEAR = { pauseId: null, resumeStatus: null };

/** The task's change when the run below it (a run-level action) moves. */
function taskFollowing(subject: Subject, runTo: string, decision: string | null = null): StatusChange[] {
  const task = subject.ancestors[0];
  if (!task || task.level !== 'task') return [];
  const follows = followTask(
    { id: task.id, status: task.status as never },
    { status: runTo as RunRow['status'], pausedForDecisionId: decision },
  );
  return follows ? [follows] : [];
}

const noop = (message: string): Plan => ({ changes: [], redispatch: [], message });

function planPause(subject: Subject, pauseId: string): Plan {
  const { root } = subject;
  if (root.status === 'paused') return noop(`The ${root.level} is already paused; nothing changed.`);
  if (!isActive(root)) fail(`Cannot pause a ${root.status} ${root.level}.`, root);
  const changes = [root, ...subject.descendants]
    .filter(isActive)
    .map((n) => change(n, 'paused', `${n.level}.paused`, { pauseId, resumeStatus: n.status }));
  if (root.level === 'run') changes.push(...taskFollowing(subject, 'paused'));
  return { changes, redispatch: [], message: `Paused ${name(root)} and what was active under it.` };
}

/** The status a node takes when it is resumed without a record of what its pause changed. */
function naturalStatus(n: PlanNode): string {
  return n.level === 'run' ? 'running' : n.level === 'task' ? 'todo' : 'active';
}

function planResume(subject: Subject): Plan {
  const { root } = subject;
  if (root.status !== 'paused') {
    if (isActive(root)) return noop(`The ${root.level} is not paused; nothing changed.`);
    fail(`Cannot resume a ${root.status} ${root.level}.`, root);
  }
  const held = subject.ancestors.find((a) => a.status === 'paused' && a.pauseId !== null);
  if (held) fail(`Its ${held.level} ${held.id} is paused; resume that first.`, root);
  if (root.level === 'run' && root.run?.pausedForDecisionId) {
    fail(`The run is held by decision ${root.run.pausedForDecisionId}; it resumes with that ruling.`, root);
  }

  let changes: StatusChange[];
  if (root.pauseId) {
    // Exactly what that pause changed, found by its pause id.
    changes = [root, ...subject.descendants]
      .filter((n) => n.status === 'paused' && n.pauseId === root.pauseId)
      .map((n) => change(n, n.resumeStatus ?? naturalStatus(n), `${n.level}.resumed`, CLEAR));
  } else if (root.level === 'task') {
    // A task paused because its run was paused on its own: resume that run, and the task follows.
    const run = subject.descendants.find((n) => n.level === 'run' && n.status === 'paused' && !n.run?.pausedForDecisionId);
    const runTo = run?.resumeStatus ?? 'running';
    changes = run
      ? [change(run, runTo, 'run.resumed', CLEAR), change(root, runTo === 'queued' ? 'todo' : 'in_progress', 'task.resumed', CLEAR)]
      : [change(root, 'todo', 'task.resumed', CLEAR)];
  } else {
    changes = [change(root, naturalStatus(root), `${root.level}.resumed`, CLEAR)];
  }
  if (root.level === 'run') changes.push(...taskFollowing(subject, changes[0]!.to));
  return { changes, redispatch: [], message: `Resumed ${name(root)} and what its pause had paused.` };
}

function planCancel(subject: Subject): Plan {
  const { root } = subject;
  if (root.status === 'cancelled') return noop(`The ${root.level} is already cancelled; nothing changed.`);
  if (isDone(root)) fail(`Cannot cancel a ${root.status} ${root.level}.`, root);
  const changes = [root, ...subject.descendants.filter(isOpen)].map((n) => change(n, 'cancelled', `${n.level}.cancelled`, CLEAR));
  if (root.level === 'run') changes.push(...taskFollowing(subject, 'cancelled'));
  return { changes, redispatch: [], message: `Cancelled ${name(root)} and what was open under it.` };
}

function planRetry(subject: Subject): Plan {
  const { root } = subject;
  const stuck = subject.ancestors.find((a) => (a.level === 'task' ? a.status === 'done' || a.pauseId !== null : a.status !== 'active'));
  if (stuck) fail(`Its ${stuck.level} ${stuck.id} is ${stuck.status}.`, root);

  if (root.level === 'run') {
    if (root.status !== 'failed' && root.status !== 'cancelled')
      fail(`Only a failed or cancelled run can be retried; this one is ${root.status}.`, root);
    const open = subject.siblingRuns?.find(isOpen);
    if (open) fail(`The task already has an open run (${open.id}).`, root);
    const task = subject.ancestors[0]!;
    const changes = task.status === 'todo' ? [] : [change(task, 'todo', 'task.redispatched', CLEAR)];
    return {
      changes,
      redispatch: [{ taskId: task.id, agentId: root.run?.agentId ?? task.agentId ?? null }],
      message: `Re-dispatched the task of ${name(root)}.`,
    };
  }
  if (root.level === 'task') {
    if (root.status !== 'failed' && root.status !== 'cancelled')
      fail(`Only a failed or cancelled task can be retried; this one is ${root.status}.`, root);
  } else if (root.status === 'paused') {
    fail(`The ${root.level} is paused; resume it first.`, root);
  } else if (root.status === 'completed') {
    fail(`Cannot retry a completed ${root.level}.`, root);
  }

  // Walk down: a container that is (or becomes) active lets its children be retried.
  const live = new Set<string>();
  const changes: StatusChange[] = [];
  const redispatch: Redispatch[] = [];
  const lastAgent = new Map<string, string | null>();
  for (const n of subject.descendants)
    if (n.level === 'run' && !lastAgent.has(n.parentId!)) lastAgent.set(n.parentId!, n.run?.agentId ?? null);
  for (const n of [root, ...subject.descendants]) {
    if (n.level === 'run') continue;
    const parentLive = n === root || live.has(n.parentId!);
    if (!parentLive) continue;
    if (n.level === 'task') {
      if (n.status === 'failed' || n.status === 'cancelled') {
        changes.push(change(n, 'todo', 'task.redispatched', CLEAR));
        redispatch.push({ taskId: n.id, agentId: n.agentId ?? lastAgent.get(n.id) ?? null });
      }
    } else if (n.status === 'active') {
      live.add(n.id);
    } else if (n.status === 'cancelled') {
      changes.push(change(n, 'active', `${n.level}.reopened`, CLEAR));
      live.add(n.id);
    }
  }
  if (redispatch.length === 0 && changes.length === 0) return noop(`Nothing under ${name(root)} is failed or cancelled; nothing changed.`);
  return { changes, redispatch, message: `Re-dispatched ${plural(redispatch.length, 'task')} under ${name(root)}.` };
}

export function planNodeAction(action: NodeAction, subject: Subject, pauseId: string): Plan {
  switch (action) {
    case 'pause':
      return planPause(subject, pauseId);
    case 'resume':
      return planResume(subject);
    case 'cancel':
      return planCancel(subject);
    case 'retry':
      return planRetry(subject);
  }
}
