/**
 * GET /tasks: List tasks, the work queue. A listing is pinned to the ledger sequence of its first
 * page (meta.asOf), which its cursor carries with the last task's place in the order.
 */
import { z } from 'zod';
import { taskPriorities, taskStatuses, taskTypes } from '@/db/schema';
import { pageTasks, TASK_SORTS, type SortKey, type TaskFilters } from '@/server/domain/tasks/list';
import { taskRecord } from '@/server/domain/hierarchy/records';
import { AppError } from '@/server/errors';
import { decodeKeysetCursor, encodeKeysetCursor } from '@/server/ledger/cursor';
import { listScope } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { apiMeta, id, pageLimit, text } from '../../schemas';
import { versionedTask } from './shared';

const listQuery = z.strictObject({
  workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace).' }),
  status: z.array(z.enum(taskStatuses)).max(7).optional().meta({ description: 'Repeatable.' }),
  type: z.array(z.enum(taskTypes)).max(5).optional().meta({ description: 'Repeatable.' }),
  priority: z.array(z.enum(taskPriorities)).max(4).optional().meta({ description: 'Repeatable.' }),
  initiative_id: id().optional(),
  workstream_id: id().optional(),
  milestone_id: id().optional(),
  agent_id: text(1, 200).optional(),
  updated_after: z.iso.datetime({ offset: true }).optional().meta({
    description:
      'Only tasks changed after this time (ISO 8601), e.g. when you read the first page of an earlier listing (meta.asOf is a ledger sequence, not a time).',
  }),
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
  limit: pageLimit(),
});

type ListQuery = z.infer<typeof listQuery>;

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

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/tasks',
      tags: ['tasks'],
      summary: 'List tasks: the work queue',
      description:
        'The workspace’s tasks, filtered, in `priority` or `updated` order, paged by cursor. `?ready=true&sort=priority` ' +
        'is what an agent should pick up next; to take it, POST /tasks/claim takes the first of it that no other agent is taking. ' +
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
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
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
    const last = page.keys.at(-1);
    return {
      data: page.tasks.map((row) => ({ ...taskRecord(row), aggregateVersion: row.version })),
      meta: {
        apiVersion: '1' as const,
        workspaceId,
        nextCursor: page.hasMore && last ? encodeKeysetCursor(secrets.cursor, scope, encodeKey(page.asOf, last)) : null,
        hasMore: page.hasMore,
        limit: input.limit,
        asOf: page.asOf,
      },
    };
  });
