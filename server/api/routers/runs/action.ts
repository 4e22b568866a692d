/** POST /runs/{runId}/actions/{action}: Pause, resume, cancel or roll back a run. */
import { z } from 'zod';
import { runStatuses } from '@/db/schema';
import { RUN_ACTION_NAMES } from '@/server/domain/runs/machine';
import { applyRunAction } from '@/server/domain/runs/actions';
import { OWNERS } from '../../trpc';
import { id, mutationHeaders, text } from '../../schemas';
import { runPath, runProcedure } from './shared';

const actionResponse = z
  .object({
    ok: z.literal(true),
    data: z.object({
      runId: z.uuid(),
      action: z.enum(RUN_ACTION_NAMES),
      status: z.enum(runStatuses).meta({ description: 'The run’s status after the action.' }),
    }),
  })
  .meta({ id: 'RunActionResponse' });

export const actionProcedure = runProcedure(OWNERS)
  .meta({
    openapi: {
      method: 'POST',
      path: '/runs/{runId}/actions/{action}',
      tags: ['runs'],
      summary: 'Pause, resume, cancel or roll back a run',
      description:
        'The run state machine: `pause` queued|running → paused; `resume` paused → running; `cancel` ' +
        'queued|running|paused → cancelled (pending decisions raised on the run are cancelled with it); `rollback` ' +
        '(body `checkpointId`, a checkpoint of this run) running|paused|failed → paused at that checkpoint. Each ' +
        'applied action is one `run.*` ledger event (plus `task.status_changed` when the task’s status follows). ' +
        'The same action on a run already in its target state is 200 with no new event; any other move is 409 ' +
        'invalid_state_transition with `details.status`. Idempotency-Key is accepted for forward compatibility only.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden', 'invalid_state_transition', 'lease_expired', 'invalid_idempotency_key'],
  })
  .input(
    runPath.extend({
      action: z.enum(RUN_ACTION_NAMES),
      reason: text(1, 1000).optional().meta({ description: 'Why, in words; kept in the event.' }),
      checkpointId: id().optional().meta({ description: 'rollback only: the checkpoint to go back to (required there).' }),
    }),
  )
  .output(actionResponse)
  .mutation(({ input, actor, write }) => {
    const { runId, action, ...body } = input;
    return write(async (tx) => {
      const result = await applyRunAction(tx, actor, runId, action, body);
      return { ok: true as const, data: { runId: result.runId, action: result.action, status: result.status } };
    });
  });
