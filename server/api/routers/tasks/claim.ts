/** POST /tasks/claim: Claim the next ready task and start its run. */
import { z } from 'zod';
import { taskPriorities, taskTypes } from '@/db/schema';
import { claimTasks, type ClaimInput } from '@/server/domain/runs/claim';
import { taskRecord } from '@/server/domain/hierarchy/records';
import { AppError } from '@/server/errors';
import type { BatchOperation } from '../../batch';
import { ownerProcedure } from '../../procedures';
import { id, mutationHeaders, text } from '../../schemas';
import { leaseSecondsInput, runSchema } from '../runs/shared';
import { versionedTask } from './shared';

const claimInput = z.strictObject({
  workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace).' }),
  agent_id: text(1, 200).meta({ description: 'Who takes the task: the run’s agent_id.' }),
  filters: z
    .strictObject({
      type: z.array(z.enum(taskTypes)).min(1).max(5).optional(),
      priority: z.array(z.enum(taskPriorities)).min(1).max(4).optional(),
      initiative_id: id().optional(),
      workstream_id: id().optional(),
      milestone_id: id().optional(),
    })
    .optional()
    .meta({ description: 'As GET /tasks takes them; the status is always ready (`?ready=true`).' }),
  lease_seconds: leaseSecondsInput().optional(),
});

const claimResponse = z
  .object({
    ok: z.literal(true),
    data: z
      .object({ task: versionedTask, run: runSchema })
      .nullable()
      .meta({ description: 'null (204, no body over REST) when nothing is ready.' }),
  })
  .meta({ id: 'ClaimResponse' });

/** Claims run in batches (server/api/batch.ts): the concurrent claims to a workspace share one transaction. */
const claims: BatchOperation<ClaimInput> = {
  name: 'tasks.claim',
  run: async (tx, items) =>
    (await claimTasks(tx, items[0]!.actor.workspaceId, items)).map((claimed) =>
      claimed instanceof AppError
        ? claimed
        : {
            ok: true as const,
            data: claimed && { task: { ...taskRecord(claimed.task), aggregateVersion: claimed.task.version }, run: claimed.run },
          },
    ),
};

export const claimProcedure = ownerProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/tasks/claim',
      tags: ['tasks'],
      summary: 'Claim the next ready task and start its run',
      description:
        'In one transaction: takes the first task of the work queue (GET /tasks?ready=true&sort=priority: urgent first, ' +
        'then oldest), with `filters`, that no other claim holds at that moment, and starts its run (`running`, the task ' +
        '`in_progress`). 201 `{task, run}`; 204 with no body when nothing is ready. Concurrent claims never get the same ' +
        'task and never wait on each other’s (FOR UPDATE SKIP LOCKED). The run holds a lease of `lease_seconds` ' +
        '(default 300): heartbeat it (POST /runs/{runId}/heartbeat) at a third of that, or the service fails the run and ' +
        'the task is ready again. `run.fence` is the run’s fencing token. With an Idempotency-Key the same key and body ' +
        'replay the original answer (200, or 204 when nothing was claimed).',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original response.', 204: 'Nothing is ready: no task was claimed.' },
    errorCodes: ['forbidden', 'not_found', 'invalid_idempotency_key', 'idempotency_conflict', 'idempotency_in_progress'],
  })
  .input(claimInput)
  .output(claimResponse)
  .mutation(async ({ ctx, input, writeInBatch }) => {
    const { workspace_id: _, ...body } = input;
    const answer = await writeInBatch(claims, body, { replay: (b) => b });
    // Nothing claimed: no content (a replay of such a claim too).
    if (answer.data === null) ctx.res.status = 204;
    return answer;
  });
