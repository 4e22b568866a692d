/** POST /runs/{runId}/finish: Report that a run ended. */
import { z } from 'zod';
import { finishRun } from '@/server/domain/runs/runs';
import { OWNERS } from '../../trpc';
import { id, mutationHeaders, text } from '../../schemas';
import { runPath, runProcedure, runResponse } from './shared';

export const finishProcedure = runProcedure(OWNERS)
  .meta({
    openapi: {
      method: 'POST',
      path: '/runs/{runId}/finish',
      tags: ['runs'],
      summary: 'Report that a run ended',
      description:
        '`completed` or `failed`, from `running`; the task becomes `done` or `failed`. Repeating the same outcome ' +
        'on a run that already has it is 200 with no new event; anything else is 409 invalid_state_transition. A run whose ' +
        'lease lapsed (it is `failed`, reason `lease_expired`, or past `lease_expires_at`) is 409 lease_expired: another ' +
        'agent may hold its task now, and nothing is written. `artifact_ids` names what the run delivered (404 for one ' +
        'that is not your workspace’s, 400 for another task’s or run’s).',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden', 'invalid_state_transition', 'lease_expired', 'invalid_idempotency_key'],
  })
  .input(
    runPath.extend({
      outcome: z.enum(['completed', 'failed']),
      summary: text(0, 4000).optional(),
      artifact_ids: z.array(id()).max(100).optional().meta({
        description:
          'What the run delivered: artifacts of your workspace (POST /artifacts) that are not another task’s or run’s; kept on the run (artifact_ids) and listed in the task’s receipt.',
      }),
    }),
  )
  .output(runResponse)
  .mutation(({ input, actor, write }) => {
    const { runId, ...body } = input;
    return write(async (tx) => ({ ok: true as const, data: await finishRun(tx, actor, runId, body) }));
  });
