/**
 * PATCH /tasks/{id}: changing what a task says (title, description, priority, estimate, agent),
 * with JSON merge patch semantics: a field sent is set, `null` clears an optional one, a field left
 * out is kept. Status is not among them: it follows runs and node actions.
 *
 * `If-Match` (the aggregateVersion, as ETag gives it) is checked under the workspace's lock, so
 * two writers that read the same version cannot both win: the second gets 412. A patch that
 * changes nothing writes nothing (no event, the same version). One `task.updated` event carries
 * each changed field, before and after.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { tasks, type TaskPriority } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { taskRecord, type TaskRecord, type TaskRow } from '../hierarchy/records';

export interface TaskPatch {
  title?: string;
  description?: string | null;
  priority?: TaskPriority;
  estimate_hours?: number | null;
  agent_id?: string | null;
}

const FIELDS = {
  title: 'title',
  description: 'description',
  priority: 'priority',
  estimate_hours: 'estimateHours',
  agent_id: 'agentId',
} as const satisfies Record<keyof TaskPatch, keyof TaskRow>;

export interface UpdatedTask {
  task: TaskRecord & { aggregateVersion: number };
  changed: string[];
}

export async function updateTask(tx: Tx, actor: Actor, input: { id: string; patch: TaskPatch; ifMatch?: number }): Promise<UpdatedTask> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [task] = await tx
    .select()
    .from(tasks)
    .where(and(eq(tasks.id, input.id), eq(tasks.workspaceId, actor.workspaceId)));
  if (!task) throw new AppError('not_found', 'No such task in your workspace.');
  if (input.ifMatch !== undefined && input.ifMatch !== task.version) {
    throw new AppError('precondition_failed', `The task is at version ${task.version}, not ${input.ifMatch}: read it again.`, {
      aggregateVersion: task.version,
    });
  }
  const changes: Record<string, { before: unknown; after: unknown }> = {};
  const set: Partial<TaskRow> = {};
  for (const [name, column] of Object.entries(FIELDS) as [keyof TaskPatch, keyof TaskRow][]) {
    if (!(name in input.patch)) continue;
    const after = input.patch[name] ?? null;
    const before = task[column] ?? null;
    if (after === before) continue;
    changes[name] = { before, after };
    (set as Record<string, unknown>)[column] = after;
  }
  const names = Object.keys(changes);
  if (names.length === 0) return { task: { ...taskRecord(task), aggregateVersion: task.version }, changed: [] };

  const at = new Date();
  const [updated] = await tx
    .update(tasks)
    .set({ ...set, version: sql`${tasks.version} + 1`, updatedAt: at })
    .where(eq(tasks.id, task.id))
    .returning();
  await appendEvents(
    tx,
    actor,
    [{ aggregateType: 'task', aggregateId: task.id, eventType: 'task.updated', payload: { task_id: task.id, changes } }],
    at,
  );
  return { task: { ...taskRecord(updated!), aggregateVersion: updated!.version }, changed: names };
}
