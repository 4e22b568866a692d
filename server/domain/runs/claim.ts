/**
 * POST /tasks/claim: an agent takes the next ready task and starts its run, in one transaction
 * (docs/contract.md §4.16). The task is the first of the work queue (GET /tasks?ready=true, in
 * priority order, with the caller's filters) that no other transaction holds: `FOR UPDATE SKIP
 * LOCKED`, so claimers never get the same task and never wait on each other's row. Concurrent
 * claims to a workspace are served in batches (server/api/batch.ts), by one pick of the queue for
 * all that share their filters.
 */
import { getTableColumns, inArray, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { query, type Tx } from '@/db';
import { initiatives, milestones, runs, tasks, workstreams, type TaskPriority, type taskTypes } from '@/db/schema';
import { AppError } from '@/server/errors';
import { atCommit } from '@/db/connection';
import { compiledSql } from '@/db/compiled';
import { appendEventsAtCommit, lockWorkspaceLedger } from '@/server/ledger/append';
import type { Actor } from '../actor';
import { runRecord, type RunRow, type TaskRow } from '../hierarchy/records';
import { statusEvent } from '../status-changes';
import { queueSql } from '../tasks/list';
import { taskMove } from './hierarchy';
import { newRun } from './runs';
import { runView, type RunView } from './view';

interface ClaimFilters {
  type?: (typeof taskTypes)[number][];
  priority?: TaskPriority[];
  initiative_id?: string;
  workstream_id?: string;
  milestone_id?: string;
}

export interface ClaimInput {
  agent_id: string;
  filters?: ClaimFilters;
  lease_seconds?: number;
}

export interface Claimed {
  task: TaskRow;
  run: RunView;
}

/**
 * Which of the nodes the filters name (initiative, workspace, milestone) are not the workspace's:
 * an id the API takes in a body is 404 for another workspace's, as for one that does not exist.
 * The claim's pick, sent in the same flight, found nothing then (the queue's tasks are the
 * workspace's), so nothing was claimed for it either.
 */
async function missingNodes(tx: Tx, workspaceId: string, f: ClaimFilters): Promise<string[]> {
  const named = (
    [
      ['initiative_id', initiatives, f.initiative_id],
      ['workstream_id', workstreams, f.workstream_id],
      ['milestone_id', milestones, f.milestone_id],
    ] as const
  ).filter(([, , id]) => id !== undefined);
  if (named.length === 0) return [];
  const [found] = await query<Record<string, boolean>>(
    tx,
    sql`select ${sql.join(
      named.map(
        ([field, table, id]) =>
          sql`exists (select 1 from ${table} where ${table.id} = ${id}::uuid and ${table.workspaceId} = ${workspaceId}::uuid) as ${sql.identifier(field)}`,
      ),
      sql`, `,
    )}`,
  );
  return named.filter(([field]) => !found?.[field]).map(([field]) => `filters.${field}`);
}

/** The claims of one batch that take the same filters: one pick of the queue serves them all. */
interface FilterGroup {
  filters: ClaimFilters;
  items: number[];
}

/**
 * The first `count` ready tasks that match `f` and no other transaction holds, marked in progress
 * (their runs follow at COMMIT), each with the fence of its next run, in queue order.
 */
async function pickTasks(tx: Tx, workspaceId: string, f: ClaimFilters, count: number, now: Date) {
  const { where, order } = queueSql(workspaceId, {
    ready: true,
    type: f.type,
    priority: f.priority,
    initiativeId: f.initiative_id,
    workstreamId: f.workstream_id,
    milestoneId: f.milestone_id,
  });
  const t = alias(tasks, 't');
  const pick = tx
    .$with('pick')
    .as(tx.select({ id: t.id }).from(t).where(where).orderBy(order).limit(count).for('update', { skipLocked: true }));
  // The task follows its new run (running → in_progress), and the run's fence is counted in the same statement.
  const picked = await tx
    .with(pick)
    .update(tasks)
    .set({ status: 'in_progress', version: sql`${tasks.version} + 1`, updatedAt: now })
    .where(inArray(tasks.id, tx.select({ id: pick.id }).from(pick)))
    .returning({
      ...getTableColumns(tasks),
      // Named in full: Drizzle writes a RETURNING column unqualified, which inside this subquery would be runs.id.
      nextFence: sql<number>`coalesce((select max(r.fence) from runs r where r.task_id = "tasks"."id"), 0) + 1`.mapWith(Number),
    });
  // RETURNING follows no order: put them back in the queue's.
  return picked.sort(
    (a, b) => PRIORITY_RANK[a.priority] - PRIORITY_RANK[b.priority] || +a.createdAt - +b.createdAt || (a.id < b.id ? -1 : 1),
  );
}

const PRIORITY_RANK: Record<TaskPriority, number> = { urgent: 0, high: 1, medium: 2, low: 3 };

/**
 * Claims for a batch of requests of one workspace (server/api/batch.ts): for each, in order, the
 * first ready task that matches its filters and that no other transaction holds, with its run
 * started; null when there is none left for it; an AppError (404) when its filters name another
 * workspace's node. Claims with the same filters share one pick of the queue, and every pick goes
 * out in one flight with the ledger lock, which, like every change to existing work, is taken first
 * (one lock order with the node actions and run services). The runs and events are left for
 * COMMIT: a batch sends one flight, then COMMIT.
 */
export async function claimTasks(
  tx: Tx,
  workspaceId: string,
  items: readonly { actor: Actor; input: ClaimInput }[],
): Promise<(Claimed | null | AppError)[]> {
  const now = new Date();
  const groups = new Map<string, FilterGroup>();
  items.forEach(({ input }, i) => {
    const filters = input.filters ?? {};
    const key = JSON.stringify(filters, Object.keys(filters).sort());
    const group = groups.get(key);
    if (group) group.items.push(i);
    else groups.set(key, { filters, items: [i] });
  });
  const [, ...found] = await Promise.all([
    lockWorkspaceLedger(tx, workspaceId),
    ...[...groups.values()].map((g) =>
      Promise.all([missingNodes(tx, workspaceId, g.filters), pickTasks(tx, workspaceId, g.filters, g.items.length, now)]),
    ),
  ]);

  const answers: (Claimed | null | AppError)[] = new Array<Claimed | null>(items.length).fill(null);
  const started: { item: number; task: TaskRow; run: RunRow }[] = [];
  [...groups.values()].forEach((group, g) => {
    const [missing, picked] = found[g]!;
    group.items.forEach((i, n) => {
      if (missing.length > 0)
        answers[i] = new AppError('not_found', `No such ${missing.join(', ')} in your workspace.`, { fields: missing });
      else if (picked[n]) {
        const { nextFence, ...task } = picked[n];
        const { agent_id: agentId, lease_seconds: leaseSeconds } = items[i]!.input;
        const run = newRun({ workspaceId, taskId: task.id, agentId, status: 'running', at: now, fence: nextFence, leaseSeconds });
        started.push({ item: i, task, run });
        answers[i] = { task, run: runView(run, []) };
      }
    });
  });
  // The events in the requests' order, each as its own actor; the runs in one statement; both with COMMIT.
  started.sort((a, b) => a.item - b.item);
  for (const { item, task, run } of started) {
    appendEventsAtCommit(
      tx,
      items[item]!.actor,
      [
        { aggregateType: 'run', aggregateId: run.id, eventType: 'run.created', payload: { ...runRecord(run), claimed: true } },
        statusEvent(taskMove({ id: task.id, status: 'todo' }, 'in_progress'), now, { run_id: run.id }),
      ],
      now,
    );
  }
  if (started.length > 0) atCommit(tx, () => insertRuns(tx, { runs: JSON.stringify(started.map((s) => runColumns(s.run))) }));
  return answers;
}

/** A run as its table's columns name it, for jsonb_populate_recordset. */
const RUN_COLUMNS = Object.entries(getTableColumns(runs)).map(([key, column]) => [key as keyof RunRow, column.name] as const);
const runColumns = (run: RunRow) => Object.fromEntries(RUN_COLUMNS.map(([key, name]) => [name, run[key]]));

/** A batch's runs in one statement, whatever their number, built once (db/compiled.ts): left for COMMIT, it must send at once. */
const insertRuns = compiledSql<{ runs: string }>(
  (p) => sql`insert into runs select * from jsonb_populate_recordset(null::runs, ${p('runs')}::jsonb)`,
);
