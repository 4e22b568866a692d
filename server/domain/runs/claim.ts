/**
 * POST /tasks/claim: an agent takes the next ready task and starts its run, in one transaction
 * (docs/contract.md §4.16). The task is the first of the work queue (GET /tasks?ready=true, in
 * priority order, with the caller's filters) that no other transaction holds: `FOR UPDATE SKIP
 * LOCKED`, so claimers never get the same task and never wait on each other's row. Like every
 * change to existing work, it holds the workspace's ledger lock first (one lock order with the
 * node actions and run services), sent in the same flight as the claim.
 */
import { getTableColumns, inArray, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { query, type Tx } from '@/db';
import { initiatives, milestones, runs, tasks, workstreams, type TaskPriority, type taskTypes } from '@/db/schema';
import { AppError } from '@/server/errors';
import { atCommit } from '@/db/connection';
import { compiled, rowPlaceholders } from '@/db/compiled';
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
 * The initiative, workstream and milestone the filters name must be the workspace's, as every id the
 * API takes in a body is (404 for another workspace's, the same as for one that does not exist).
 */
async function assertOwnNodes(tx: Tx, workspaceId: string, f: ClaimFilters): Promise<void> {
  const named = (
    [
      ['initiative_id', initiatives, f.initiative_id],
      ['workstream_id', workstreams, f.workstream_id],
      ['milestone_id', milestones, f.milestone_id],
    ] as const
  ).filter(([, , id]) => id !== undefined);
  if (named.length === 0) return;
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
  const missing = named.filter(([field]) => !found?.[field]).map(([field]) => `filters.${field}`);
  if (missing.length > 0) throw new AppError('not_found', `No such ${missing.join(', ')} in your workspace.`, { fields: missing });
}

/**
 * Claims the first ready task that matches; null when there is none (or every one is being claimed).
 * Its run and events are left for COMMIT (atCommit, appendEventsAtCommit), so a claim sends one
 * flight before COMMIT: POST /tasks/claim runs in the claims lane (server/api/mutation.ts), in
 * transactions no write that appends at once shares, whose events would otherwise come first.
 */
export async function claimTask(tx: Tx, actor: Actor, input: ClaimInput): Promise<Claimed | null> {
  const now = new Date();
  const f = input.filters ?? {};
  const { where, order } = queueSql(actor.workspaceId, {
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
    .as(tx.select({ id: t.id }).from(t).where(where).orderBy(order).limit(1).for('update', { skipLocked: true }));
  // The task follows its new run (running → in_progress), and the run's fence is counted in the same statement.
  const claim = tx
    .with(pick)
    .update(tasks)
    .set({ status: 'in_progress', version: sql`${tasks.version} + 1`, updatedAt: now })
    .where(inArray(tasks.id, tx.select({ id: pick.id }).from(pick)))
    .returning({
      ...getTableColumns(tasks),
      // Named in full: Drizzle writes a RETURNING column unqualified, which inside this subquery would be runs.id.
      nextFence: sql<number>`coalesce((select max(r.fence) from runs r where r.task_id = "tasks"."id"), 0) + 1`.mapWith(Number),
    });
  const [, , [claimed]] = await Promise.all([lockWorkspaceLedger(tx, actor.workspaceId), assertOwnNodes(tx, actor.workspaceId, f), claim]);
  if (!claimed) return null;
  const { nextFence, ...task } = claimed;

  const run: RunRow = newRun({
    workspaceId: actor.workspaceId,
    taskId: task.id,
    agentId: input.agent_id,
    status: 'running',
    at: now,
    fence: nextFence,
    leaseSeconds: input.lease_seconds,
  });
  // The run and its events go with COMMIT: a claim is one flight to the database, then COMMIT.
  atCommit(tx, () => insertRun(tx, { run }));
  appendEventsAtCommit(
    tx,
    actor,
    [
      { aggregateType: 'run', aggregateId: run.id, eventType: 'run.created', payload: { ...runRecord(run), claimed: true } },
      statusEvent(taskMove({ id: task.id, status: 'todo' }, 'in_progress'), now, { run_id: run.id }),
    ],
    now,
  );
  return { task, run: runView(run, []) };
}

// A claim's run has not finished: finished_at keeps its default (null), which the timestamp encoder would refuse.
const RUN_KEYS = (
  Object.keys(newRun({ workspaceId: '', taskId: '', agentId: null, status: 'running', at: new Date(0), fence: 1 })) as (keyof RunRow)[]
).filter((k) => k !== 'finishedAt');

/** A claim's run, built once (db/compiled.ts) and sent with COMMIT. */
const insertRun = compiled<{ run: RunRow }>((tx, p) => tx.insert(runs).values(rowPlaceholders(RUN_KEYS, 'run', p)));
