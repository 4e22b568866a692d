/** POST /work: create a work item (task) with its receipt. */
import { z } from 'zod';
import { taskPriorities } from '@/db/schema';
import { createWork, type CreatedWork } from '@/server/domain/work/create-work';
import { agentProcedure } from '../../procedures';
import { taskSchema } from '../tasks/task-schema';
import { apiMeta, id, jsonNumber, mutationHeaders, text, timestamp } from '../../schemas';

const createWorkInput = z
  .strictObject({
    title: text(1, 240).meta({ description: 'Required. 1 to 240 characters.' }),
    description: text(0, 4000).optional().meta({ description: 'At most 4000 characters.' }),
    priority: z.enum(taskPriorities).default('medium'),
    estimate_hours: jsonNumber({ min: 0, max: 100_000 }).optional().meta({ description: 'Hours, a number ≥ 0.' }),
    initiative_id: id().optional(),
    workstream_id: id().optional(),
    milestone_id: id().optional(),
  })
  .meta({
    description:
      'Only `title` is required; the task then goes to the workspace Inbox. For explicit placement send all three of ' +
      '`initiative_id`, `workstream_id` and `milestone_id`: they must exist in your workspace (else 404) and nest (else 400).',
  });

const receiptSchema = z
  .object({
    id: z.uuid(),
    task_id: z.uuid(),
    status: z.literal('completed'),
    summary: z.string(),
    created_at: timestamp(),
  })
  .meta({ id: 'Receipt' });

const createWorkOutput = z
  .object({
    data: z.object({
      taskId: z.uuid(),
      receiptId: z.uuid(),
      eventId: z.uuid(),
      aggregateVersion: z.int(),
      eventHash: z.string(),
      duplicate: z.boolean(),
      task: taskSchema,
      receipt: receiptSchema,
    }),
    meta: apiMeta.extend({ duplicate: z.boolean() }),
  })
  .meta({ id: 'CreateWorkResponse' });

type CreateWorkBody = z.infer<typeof createWorkOutput>;

/** The body of a created work item (also what its Idempotency-Key stores; bench/limit.ts records it). */
export function presentCreatedWork(workspaceId: string, created: CreatedWork): CreateWorkBody {
  return {
    data: {
      taskId: created.task.id,
      receiptId: created.receipt.id,
      eventId: created.event.id,
      aggregateVersion: created.event.aggregateVersion,
      eventHash: created.event.eventHash,
      duplicate: false,
      task: created.task,
      receipt: created.receipt,
    },
    meta: { apiVersion: '1', workspaceId, duplicate: false },
  };
}

const markDuplicate = (body: CreateWorkBody): CreateWorkBody => ({
  data: { ...body.data, duplicate: true },
  meta: { ...body.meta, duplicate: true },
});

export const createProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/work',
      tags: ['work'],
      summary: 'Create a work item and its receipt',
      description:
        'Creates a task (status `todo`) and its receipt (status `completed`, summary = title) and appends one ' +
        '`work.created` ledger event, all in one transaction. With an `Idempotency-Key`, a retry with the same body ' +
        'replays the original response with status 200 and `duplicate: true`, writing nothing.',
      requestHeaders: mutationHeaders,
    },
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original response, with data.duplicate and meta.duplicate true.' },
    errorCodes: ['not_found', 'invalid_idempotency_key', 'idempotency_conflict', 'idempotency_in_progress'],
  })
  .input(createWorkInput)
  .output(createWorkOutput)
  .mutation(({ input, actor, write }) =>
    // createWork appends at COMMIT and locks nothing of the ledger before it: its transaction
    // may be shared with POST /work to other workspaces (db/group.ts, shared groups).
    write(async (tx) => presentCreatedWork(actor.workspaceId, await createWork(tx, actor, input)), {
      replay: markDuplicate,
      acrossWorkspaces: true,
    }),
  );
