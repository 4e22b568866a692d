/** GET /tasks/{id}: One task, with what surrounds it. */
import { z } from 'zod';
import { taskStatuses } from '@/db/schema';
import { taskDetail } from '@/server/domain/tasks/detail';
import { etag } from '../../versioning';
import { apiMeta, id, timestamp } from '../../schemas';
import { noSuchTask, taskProcedure, versionedTask } from './shared';

const taskDetailOutput = z
  .object({
    data: z.object({
      task: versionedTask,
      placement: z.object({
        initiative: z.object({ id: z.uuid(), title: z.string(), status: z.string(), is_inbox: z.boolean() }),
        workstream: z.object({ id: z.uuid(), name: z.string(), status: z.string() }),
        milestone: z.object({ id: z.uuid(), title: z.string(), status: z.string() }),
      }),
      receipt: z.object({ id: z.uuid(), status: z.string(), summary: z.string(), created_at: timestamp() }).nullable(),
      holder: z
        .object({ runId: z.uuid(), agent_id: z.string().nullable(), fence: z.int(), lease_expires_at: timestamp() })
        .nullable()
        .meta({ description: 'The running run that holds the task’s lease, its agent and until when; null when none does.' }),
      runs: z.array(
        z.object({
          runId: z.uuid(),
          status: z.string(),
          agent_id: z.string().nullable(),
          fence: z.int(),
          lease_expires_at: timestamp().nullable(),
          failure_reason: z
            .enum(['lease_expired'])
            .nullable()
            .meta({ description: '`lease_expired`: the run’s agent stopped heartbeating and lost the task.' }),
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
  .meta({ id: 'TaskDetail' });

export const getProcedure = taskProcedure()
  .meta({
    openapi: {
      method: 'GET',
      path: '/tasks/{id}',
      tags: ['tasks'],
      summary: 'One task, with what surrounds it',
      description:
        'The task (with `aggregateVersion`, also sent as the ETag), its placement (initiative, workstream, milestone: ids, ' +
        'titles, statuses), its receipt, who holds it now (`holder`: the running run’s agent and lease), its runs (newest first, by fence; checkpoints counted), the decisions that name it (newest ' +
        'first) and its dependencies with their statuses.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found'],
    successHeaders: { ETag: 'The task’s aggregateVersion, quoted: send it back as If-Match on PATCH.' },
  })
  .input(z.strictObject({ id: id() }))
  .output(taskDetailOutput)
  .query(async ({ ctx, input, actor }) => {
    const detail = await taskDetail(ctx.runtime.db, actor.workspaceId, input.id);
    if (!detail) throw noSuchTask();
    ctx.res.headers.ETag = etag(detail.task.aggregateVersion);
    return { data: detail, meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId } };
  });
