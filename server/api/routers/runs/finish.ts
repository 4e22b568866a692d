/** POST /runs/{runId}/finish: Report that a run ended. */
import { z } from 'zod';
import { finishRun } from '@/server/domain/runs/runs';
import { OWNERS } from '../../trpc';
import { mutationHeaders, text } from '../../schemas';
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
        'agent may hold its task now, and nothing is written.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden', 'invalid_state_transition', 'lease_expired', 'invalid_idempotency_key'],
  })
  .input(runPath.extend({ outcome: z.enum(['completed', 'failed']), summary: text(0, 4000).optional() }))
  .output(runResponse)
  .mutation(({ input, actor, write }) => {
    const { runId, ...body } = input;
    return write(async (tx) => ({ ok: true as const, data: await finishRun(tx, actor, runId, body) }));
  });
