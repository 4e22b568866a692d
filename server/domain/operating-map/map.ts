/**
 * The operating map: per initiative (a process), its stages (workstreams with task counts by
 * status), its handoffs (dependency edges and handoff_route decisions) and its evidence (receipts
 * with the hash of the event that recorded them). Computed from a projection state, which the API
 * builds from ledger events alone.
 */
import { taskStatuses, type RunStatus, type TaskStatus } from '@/db/schema';
import type { ProjectionState } from '../projection';

interface Stage {
  workstream_id: string;
  name: string;
  status: string;
  domain: string;
  agent_id: string | null;
  depends_on: string[];
  milestones: number;
  tasks_total: number;
  task_counts: Record<TaskStatus, number>;
  /** Runs of the stage's tasks, by status (only statuses that occur). */
  run_counts: Partial<Record<RunStatus, number>>;
  estimate_hours: number;
}

type Handoff =
  | { kind: 'dependency'; level: 'workstream' | 'task'; from_id: string; to_id: string }
  | { kind: 'decision'; decision_id: string; title: string; status: string; workstream_id: string | null; task_id: string | null };

interface Evidence {
  receipt_id: string;
  task_id: string;
  summary: string;
  status: string;
  event_id: string;
  event_hash: string;
  sequence: number;
}

export interface Process {
  initiative_id: string;
  title: string;
  status: string;
  is_inbox: boolean;
  stages: Stage[];
  handoffs: Handoff[];
  evidence: Evidence[];
}

/** Creation order: when, then the order given among siblings created together, then id. */
const byCreation = <R extends { createdAt: Date; id: string; position?: number }>(a: R, b: R) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.position ?? 0) - (b.position ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export interface OperatingMap {
  processes: Process[];
  totalProcesses: number;
  /** Every aggregate the returned processes are made of (initiative, workstreams, milestones, tasks, runs, decisions). */
  aggregateIds: Set<string>;
}

/**
 * The `limit` most recently created processes, newest first (the whole map when limit ≥ their
 * number), or only the process of `initiativeId`.
 */
export function operatingMap(state: ProjectionState, limit: number, initiativeId?: string): OperatingMap {
  const all = [...state.initiatives.values()].filter((i) => !initiativeId || i.id === initiativeId).sort((a, b) => -byCreation(a, b));
  const wsByInitiative = group([...state.workstreams.values()], (w) => w.initiativeId);
  const tasksByWorkstream = group([...state.tasks.values()], (t) => t.workstreamId);
  const milestonesByWorkstream = group([...state.milestones.values()], (m) => m.workstreamId);
  const handoffDecisions = group(
    [...state.decisions.values()].filter((d) => d.shape === 'handoff_route' && d.initiativeId),
    (d) => d.initiativeId!,
  );
  const receiptsByTask = group([...state.receipts.values()], (r) => r.taskId);
  const runsByTask = group([...state.runs.values()], (r) => r.taskId);
  const decisionsByInitiative = group(
    [...state.decisions.values()].filter((d) => d.initiativeId),
    (d) => d.initiativeId!,
  );
  const aggregateIds = new Set<string>();

  const processes = all.slice(0, limit).map((initiative): Process => {
    const workstreams = (wsByInitiative.get(initiative.id) ?? []).sort(byCreation);
    aggregateIds.add(initiative.id);
    for (const d of decisionsByInitiative.get(initiative.id) ?? []) aggregateIds.add(d.id);
    const stages: Stage[] = [];
    const handoffs: Handoff[] = [];
    const evidence: Evidence[] = [];
    for (const w of workstreams) {
      const wsTasks = (tasksByWorkstream.get(w.id) ?? []).sort(byCreation);
      const counts = Object.fromEntries(taskStatuses.map((s) => [s, 0])) as Record<TaskStatus, number>;
      const runCounts: Partial<Record<RunStatus, number>> = {};
      let hours = 0;
      aggregateIds.add(w.id);
      for (const m of milestonesByWorkstream.get(w.id) ?? []) aggregateIds.add(m.id);
      for (const t of wsTasks) {
        counts[t.status]++;
        hours += t.estimateHours ?? 0;
        aggregateIds.add(t.id);
        for (const r of runsByTask.get(t.id) ?? []) {
          runCounts[r.status] = (runCounts[r.status] ?? 0) + 1;
          aggregateIds.add(r.id);
        }
      }
      stages.push({
        workstream_id: w.id,
        name: w.name,
        status: w.status,
        domain: w.domain,
        agent_id: w.agentId,
        depends_on: w.dependsOn,
        milestones: milestonesByWorkstream.get(w.id)?.length ?? 0,
        tasks_total: wsTasks.length,
        task_counts: counts,
        run_counts: runCounts,
        estimate_hours: hours,
      });
      for (const dep of w.dependsOn) handoffs.push({ kind: 'dependency', level: 'workstream', from_id: dep, to_id: w.id });
      for (const t of wsTasks) {
        for (const dep of t.dependsOn) handoffs.push({ kind: 'dependency', level: 'task', from_id: dep, to_id: t.id });
        for (const r of receiptsByTask.get(t.id) ?? []) {
          const event = state.receiptEvents.get(r.id);
          if (!event) continue;
          evidence.push({
            receipt_id: r.id,
            task_id: t.id,
            summary: r.summary,
            status: r.status,
            event_id: event.eventId,
            event_hash: event.eventHash,
            sequence: event.sequence,
          });
        }
      }
    }
    for (const d of (handoffDecisions.get(initiative.id) ?? []).sort(byCreation)) {
      handoffs.push({
        kind: 'decision',
        decision_id: d.id,
        title: d.title,
        status: d.status,
        workstream_id: d.workstreamId,
        task_id: d.taskId,
      });
    }
    evidence.sort((a, b) => a.sequence - b.sequence);
    return {
      initiative_id: initiative.id,
      title: initiative.title,
      status: initiative.status,
      is_inbox: initiative.isInbox,
      stages,
      handoffs,
      evidence,
    };
  });
  return { processes, totalProcesses: all.length, aggregateIds };
}

function group<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
