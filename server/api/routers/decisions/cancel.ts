/** POST /decisions/{id}/cancel: Cancel a decision (signed-in owners). */
import { z } from 'zod';
import { OWNERS } from '../../trpc';
import { decisionBody } from './schemas';
import { rule, rulingFields, rulingProcedure } from './ruling';

export const cancelProcedure = rulingProcedure(OWNERS)
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions/{id}/cancel',
      tags: ['decisions'],
      summary: 'Cancel a decision (signed-in owners)',
      description:
        'Withdraws a pending decision: status `cancelled`, with a resolution and a `decision.cancelled` event. For a ' +
        'signed-in owner of the decision’s workspace (who may cancel a decision they raised); an API key gets 403 ' +
        'human_session_required.',
    },
    auth: ['Session'],
    errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending'],
  })
  .input(z.strictObject(rulingFields))
  .output(decisionBody)
  .mutation(rule('cancelled'));
