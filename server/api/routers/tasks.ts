/**
 * Tasks as a work queue: GET /tasks (filters, two orders, snapshot-pinned cursor paging),
 * GET /tasks/{id} (the task with its placement, receipt, runs, decisions and dependencies), and
 * PATCH /tasks/{id} (JSON merge patch of what a task says; If-Match; ETag).
 */
import { z } from 'zod';
import { inArray } from 'drizzle-orm';
import { taskPriorities, tasks, taskStatuses, taskTypes } from '@/db/schema';
import { taskDetail } from '@/server/domain/tasks/detail';
import { pageTasks, TASK_SORTS, type SortKey, type TaskFilters } from '@/server/domain/tasks/list';
import { updateTask } from '@/server/domain/tasks/update';
import { taskRecord } from '@/server/domain/hierarchy/records';
import { AppError } from '@/server/errors';
import { decodeKeysetCursor, encodeKeysetCursor } from '@/server/ledger/cursor';
import type { Actor, Trace } from '@/server/domain/actor';
import { listScope } from '../keyset';
import { actorFor } from '../locate';
import { etag, ifMatchOf, patchHeaders } from '../versioning';
import { checkedInTransaction, runMutation } from '../mutation';
import { actorIn, defaultWorkspace, memberProcedure, router, type ApiContext, type Principal } from '../trpc';
import { apiMeta, id, jsonNumber, text, timestamp } from '../schemas';
import { taskSchema } from './task-schemas';

const versionedTask = taskSchema.extend({ aggregateVersion: z.int() }).meta({ id: 'VersionedTask' });

const listQuery = z.strictObject({
  workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace).' }),
  status: z.array(z.enum(taskStatuses)).max(7).optional().meta({ description: 'Repeatable.' }),
  type: z.array(z.enum(taskTypes)).max(5).optional().meta({ description: 'Repeatable.' }),
  priority: z.array(z.enum(taskPriorities)).max(4).optional().meta({ description: 'Repeatable.' }),
  initiative_id: id().optional(),
  workstream_id: id().optional(),
  milestone_id: id().optional(),
  agent_id: text(1, 200).optional(),
  updated_after: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'Only tasks changed after this time (ISO 8601), e.g. meta.asOf of an earlier listing.' }),
  ready: z
    .stringbool()
    .optional()
    .meta({
      description:
        'true: only tasks an agent can start now: `todo`, not held by a pause, every dependency `done`, its initiative, ' +
        'workstream and milestone `active`, and no open run (queued, running or paused).',
    }),
  sort: z
    .enum(TASK_SORTS)
    .default('priority')
    .meta({ description: '`priority`: urgent first, then oldest first (default). `updated`: most recently changed first.' }),
  cursor: z.string().max(512).meta({ description: 'meta.nextCursor of the previous page, with the same filters and sort.' }).optional(),
  limit: z.coerce.number().int().min(1).max(100).meta({ description: '1 to 100, default 50.' }).default(50),
});

type ListQuery = z.infer<typeof listQuery>;

const patchBody = z.strictObject({
  id: id(),
  title: text(1, 500).optional(),
  description: text(0, 4000).nullable().optional(),
  priority: z.enum(taskPriorities).optional(),
  estimate_hours: jsonNumber({ min: 0, max: 100_000 }).nullable().optional(),
  agent_id: text(1, 200).nullable().optional(),
});

const updateOutput = z
  .object({
    data: z.object({
      task: versionedTask,
      changed: z.array(z.string()).meta({ description: 'The fields this patch changed (empty: it changed nothing).' }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'TaskUpdate' });
type UpdateBody = z.infer<typeof updateOutput>;

const noSuchTask = () => new AppError('not_found', 'No such task in your workspace.');

/** The task `taskId` as the caller may see it, with the actor acting on it; another workspace's is 404. */
const locate = (ctx: ApiContext & { principal: Principal; trace: Trace }, taskId: string, roles?: readonly ('owner' | 'approver')[]) =>
  actorFor(ctx, tasks, taskId, noSuchTask, roles);

function encodeKey(asOf: number, key: SortKey): string[] {
  return key.sort === 'priority' ? [String(asOf), String(key.rank), key.createdAt, key.id] : [String(asOf), key.updatedAt, key.id];
}

function decodeKey(sort: ListQuery['sort'], values: string[]): { asOf: number; key: SortKey } | null {
  const asOf = Number(values[0]);
  if (!Number.isSafeInteger(asOf) || asOf < 0) return null;
  if (sort === 'priority') return { asOf, key: { sort, rank: Number(values[1]), createdAt: values[2]!, id: values[3]! } };
  return { asOf, key: { sort, updatedAt: values[1]!, id: values[2]! } };
}

const filtersOf = (q: ListQuery): TaskFilters => ({
  status: q.status,
  type: q.type,
  priority: q.priority,
  initiativeId: q.initiative_id,
  workstreamId: q.workstream_id,
  milestoneId: q.milestone_id,
  agentId: q.agent_id,
  updatedAfter: q.updated_after ? new Date(q.updated_after) : undefined,
  ready: q.ready,
});

export const tasksRouter = router({
  list: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/tasks',
        tags: ['tasks'],
        summary: 'List tasks: the work queue',
        description:
          'The workspace’s tasks, filtered, in `priority` or `updated` order, paged by cursor. `?ready=true&sort=priority` ' +
          'is what an agent should pick up next; picking it up is POST /runs (one agent wins a race, the others get 409). ' +
          'A listing is pinned to its first page (`meta.asOf`, a ledger sequence): each task that existed then is served ' +
          'exactly once across the pages, at the place it had then, even while tasks change; tasks created later are not ' +
          'in it (list them with `updated_after`). Filters apply to tasks as they are now, and each task is shown as it is now.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['forbidden', 'invalid_cursor'],
    })
    .input(listQuery)
    .output(
      z
        .object({
          data: z.array(versionedTask),
          meta: apiMeta.extend({
            nextCursor: z.string().nullable(),
            hasMore: z.boolean(),
            limit: z.int(),
            asOf: z.int().meta({ description: 'The ledger sequence the listing is pinned to (the head at its first page).' }),
          }),
        })
        .meta({ id: 'TaskPage' }),
    )
    .query(async ({ ctx, input }) => {
      const workspaceId = input.workspace_id ?? defaultWorkspace(ctx.principal);
      actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden' });
      const { db, secrets } = ctx.runtime;
      const scope = listScope('tasks', workspaceId, input);
      let after: { asOf: number; key: SortKey } | undefined;
      if (input.cursor !== undefined) {
        const values = decodeKeysetCursor(secrets.cursor, scope, input.cursor, input.sort === 'priority' ? 4 : 3);
        const decoded = values && decodeKey(input.sort, values);
        if (!decoded) throw new AppError('invalid_cursor', 'This cursor was not issued for this listing (workspace, filters and sort).');
        after = decoded;
      }
      const page = await pageTasks(db, workspaceId, { sort: input.sort, filters: filtersOf(input), limit: input.limit, after });
      const rows = page.ids.length ? await db.select().from(tasks).where(inArray(tasks.id, page.ids)) : [];
      const byId = new Map(rows.map((r) => [r.id, r]));
      const last = page.keys.at(-1);
      return {
        data: page.ids.map((taskId) => {
          const row = byId.get(taskId)!;
          return { ...taskRecord(row), aggregateVersion: row.version };
        }),
        meta: {
          apiVersion: '1' as const,
          workspaceId,
          nextCursor: page.hasMore && last ? encodeKeysetCursor(secrets.cursor, scope, encodeKey(page.asOf, last)) : null,
          hasMore: page.hasMore,
          limit: input.limit,
          asOf: page.asOf,
        },
      };
    }),

  get: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/tasks/{id}',
        tags: ['tasks'],
        summary: 'One task, with what surrounds it',
        description:
          'The task (with `aggregateVersion`, also sent as the ETag), its placement (initiative, workstream, milestone: ids, ' +
          'titles, statuses), its receipt, its runs (newest first, checkpoints counted), the decisions that name it (newest ' +
          'first) and its dependencies with their statuses.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found'],
      successHeaders: { ETag: 'The task’s aggregateVersion, quoted: send it back as If-Match on PATCH.' },
    })
    .input(z.strictObject({ id: id() }))
    .output(
      z
        .object({
          data: z.object({
            task: versionedTask,
            placement: z.object({
              initiative: z.object({ id: z.uuid(), title: z.string(), status: z.string(), is_inbox: z.boolean() }),
              workstream: z.object({ id: z.uuid(), name: z.string(), status: z.string() }),
              milestone: z.object({ id: z.uuid(), title: z.string(), status: z.string() }),
            }),
            receipt: z.object({ id: z.uuid(), status: z.string(), summary: z.string(), created_at: timestamp() }).nullable(),
            runs: z.array(
              z.object({
                runId: z.uuid(),
                status: z.string(),
                agent_id: z.string().nullable(),
                checkpoints: z.int(),
                created_at: timestamp(),
                updated_at: timestamp(),
                finished_at: timestamp().nullable(),
              }),
            ),
            decisions: z.array(
              z.object({
                id: z.uuid(),
                title: z.string(),
                status: z.string(),
                urgency: z.string(),
                blocks_task: z.boolean(),
                created_at: timestamp(),
              }),
            ),
            dependencies: z.array(z.object({ id: z.uuid(), title: z.string(), status: z.enum(taskStatuses) })),
          }),
          meta: apiMeta,
        })
        .meta({ id: 'TaskDetail' }),
    )
    .query(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      const detail = await taskDetail(ctx.runtime.db, actor.workspaceId, input.id);
      if (!detail) throw noSuchTask();
      ctx.res.headers.ETag = etag(detail.task.aggregateVersion);
      return { data: detail, meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId } };
    }),

  update: memberProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/tasks/{id}',
        tags: ['tasks'],
        summary: 'Change what a task says',
        description:
          'JSON merge patch (RFC 7396) of `title`, `description`, `priority`, `estimate_hours` and `agent_id`: a field sent ' +
          'is set, `null` clears an optional one (description, estimate_hours, agent_id), a field left out is kept. Status ' +
          'is not patchable: it follows runs and lifecycle actions. With `If-Match: "<aggregateVersion>"`, a task that has ' +
          'moved past that version is 412 precondition_failed and nothing changes. One `task.updated` event carries each ' +
          'changed field, before and after; a patch that changes nothing is 200 and writes nothing. The response’s ETag is ' +
          'the new version. Idempotency-Key works as on POST /work (a replay is the original response).',
        requestHeaders: patchHeaders,
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: [
        'not_found',
        'forbidden',
        'precondition_failed',
        'invalid_idempotency_key',
        'idempotency_conflict',
        'idempotency_in_progress',
      ],
      successHeaders: { ETag: 'The task’s aggregateVersion after the change, quoted.' },
    })
    .input(patchBody)
    .output(checkedInTransaction(updateOutput))
    .mutation(async ({ ctx, input }) => {
      const actor: Actor = await locate(ctx, input.id, ['owner', 'approver']);
      const ifMatch = ifMatchOf(ctx.headers);
      const { id: taskId, ...patch } = input;
      const body = await runMutation<UpdateBody>(ctx, actor, { status: 200, replay: (b) => b, output: updateOutput }, async (tx) => {
        const updated = await updateTask(tx, actor, { id: taskId, patch, ifMatch });
        return { data: updated, meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId } };
      });
      ctx.res.headers.ETag = etag(body.data.task.aggregateVersion);
      return body;
    }),
});
