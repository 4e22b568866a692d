/** PATCH /tasks/{id}: Change what a task says. */
import { z } from 'zod';
import { taskPriorities } from '@/db/schema';
import { updateTask } from '@/server/domain/tasks/update';
import { etag, ifMatchOf, patchHeaders } from '../../versioning';
import { apiMeta, id, jsonNumber, text } from '../../schemas';
import { taskProcedure, versionedTask } from './shared';

const patchBody = z.strictObject({
  id: id(),
  // A title's bounds are the specification's for POST /work, whichever way it is set.
  title: text(1, 240).optional(),
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

export const updateProcedure = taskProcedure(['owner', 'approver'])
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
  .output(updateOutput)
  .mutation(async ({ ctx, input, actor, write }) => {
    const ifMatch = ifMatchOf(ctx.headers);
    const { id: taskId, ...patch } = input;
    const body = await write(
      async (tx) => ({
        data: await updateTask(tx, actor, { id: taskId, patch, ifMatch }),
        meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId },
      }),
      { replay: (b) => b },
    );
    ctx.res.headers.ETag = etag(body.data.task.aggregateVersion);
    return body;
  });
