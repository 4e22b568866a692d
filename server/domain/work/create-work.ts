/**
 * POST /work: a task with its receipt, placed in the Inbox or in an explicit milestone, recorded as
 * one `work.created` event. The receipt is created `completed`: it attests that the work item was
 * accepted and recorded, with the event hash that proves it.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { query, type Tx } from '@/db';
import { compiled, rowPlaceholders } from '@/db/compiled';
import { receipts, tasks, type TaskPriority } from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { appendEventsAtCommit } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { receiptRow, taskRow, type ReceiptRecord, type TaskRecord } from '../hierarchy/records';
import { inboxIds, type InboxIds } from '../workspaces/ids';

export interface CreateWorkInput {
  title: string;
  description?: string;
  priority: TaskPriority;
  estimate_hours?: number;
  initiative_id?: string;
  workstream_id?: string;
  milestone_id?: string;
}

export type TaskView = TaskRecord;
export type ReceiptView = ReceiptRecord;

export interface CreatedWork {
  task: TaskView;
  receipt: ReceiptView;
  event: LedgerEvent;
}

export async function createWork(tx: Tx, actor: Actor, input: CreateWorkInput): Promise<CreatedWork> {
  const placed = input.initiative_id || input.workstream_id || input.milestone_id;
  const placement = placed ? await resolvePlacement(tx, actor.workspaceId, input) : inboxIds(actor.workspaceId);
  const now = new Date();
  const at = now.toISOString();
  const task: TaskView = {
    id: randomUUID(),
    initiative_id: placement.initiativeId,
    workstream_id: placement.workstreamId,
    milestone_id: placement.milestoneId,
    position: 0,
    title: input.title,
    description: input.description ?? null,
    status: 'todo',
    priority: input.priority,
    type: 'build',
    estimate_hours: input.estimate_hours ?? null,
    agent_id: null,
    depends_on: [],
    created_at: at,
    updated_at: at,
  };
  const receipt: ReceiptView = { id: randomUUID(), task_id: task.id, status: 'completed', summary: input.title, created_at: at };

  // Task and receipt in one statement; the receipt's foreign key is checked at the end of the
  // statement, when the task row exists. The event is appended at COMMIT (server/ledger/append.ts):
  // its sealed fields are stand-ins until then, which only the response carries.
  const insert = insertWork(tx, {
    task: taskRow(task, { workspaceId: actor.workspaceId, version: 1, at: now }),
    receipt: receiptRow(receipt, { workspaceId: actor.workspaceId, at: now }),
  });
  const [event] = appendEventsAtCommit(
    tx,
    actor,
    [{ aggregateType: 'task', aggregateId: task.id, eventType: 'work.created', payload: { task, receipt } }],
    now,
  );
  await insert;
  return { task, receipt, event: event! };
}

const TASK_KEYS = Object.keys(taskRow({} as never, {} as never)) as (keyof ReturnType<typeof taskRow>)[];
const RECEIPT_KEYS = Object.keys(receiptRow({} as never, {} as never)) as (keyof ReturnType<typeof receiptRow>)[];

/** POST /work's insert, built once (db/compiled.ts): it runs on every request. */
const insertWork = compiled<{ task: Record<string, unknown>; receipt: Record<string, unknown> }>((tx, p) => {
  const insertedTask = tx.$with('inserted_task').as(
    tx
      .insert(tasks)
      .values(rowPlaceholders(TASK_KEYS, 'task', p))
      .returning({ id: tasks.id }),
  );
  return tx
    .with(insertedTask)
    .insert(receipts)
    .values(rowPlaceholders(RECEIPT_KEYS, 'receipt', p));
});

/**
 * Placement ids come all three or none (none: the Inbox, decided by the caller without a lookup). Explicit placement must name an initiative, a workstream of it and a milestone of that
 * workstream, all in the caller's workspace. A missing id is 404 (never revealing other
 * workspaces); ids that exist but do not nest are 400.
 */
async function resolvePlacement(tx: Tx, workspaceId: string, input: CreateWorkInput): Promise<InboxIds> {
  const { initiative_id: initiativeId, workstream_id: workstreamId, milestone_id: milestoneId } = input;
  if (!initiativeId || !workstreamId || !milestoneId) {
    const issues = (['initiative_id', 'workstream_id', 'milestone_id'] as const)
      .filter((f) => !input[f])
      .map((path) => ({ path, message: 'required when any placement id is given (send all three or none)' }));
    throw new AppError('validation_failed', 'Send initiative_id, workstream_id and milestone_id together, or none.', { issues });
  }

  const [row] = await query<{ initiative: string | null; workstream_parent: string | null; milestone_parent: string | null }>(
    tx,
    sql`select
          (select i.id from initiatives i where i.id = ${initiativeId} and i.workspace_id = ${workspaceId}) as initiative,
          (select w.initiative_id from workstreams w where w.id = ${workstreamId} and w.workspace_id = ${workspaceId}) as workstream_parent,
          (select m.workstream_id from milestones m where m.id = ${milestoneId} and m.workspace_id = ${workspaceId}) as milestone_parent`,
  );
  const missing = [
    !row?.initiative && 'initiative_id',
    !row?.workstream_parent && 'workstream_id',
    !row?.milestone_parent && 'milestone_id',
  ].filter((f): f is string => Boolean(f));
  if (missing.length > 0) {
    throw new AppError('not_found', `No ${missing.join(', ')} with that id in this workspace.`, { fields: missing });
  }
  const issues: { path: string; message: string }[] = [];
  if (row!.workstream_parent !== initiativeId)
    issues.push({ path: 'workstream_id', message: 'workstream does not belong to initiative_id' });
  if (row!.milestone_parent !== workstreamId) issues.push({ path: 'milestone_id', message: 'milestone does not belong to workstream_id' });
  if (issues.length > 0) throw new AppError('validation_failed', 'The placement ids do not nest.', { issues });
  return { initiativeId, workstreamId, milestoneId };
}
