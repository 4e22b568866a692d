/** POST /decisions/{id}/decline: Decline a decision (signed-in humans). */
import { z } from 'zod';
import { RULING_ROLES } from '@/server/domain/decisions/policy';
import { decisionBody } from './schemas';
import { rule, rulingFields, rulingProcedure } from './ruling';

export const declineProcedure = rulingProcedure(RULING_ROLES)
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions/{id}/decline',
      tags: ['decisions'],
      summary: 'Decline a decision (signed-in humans)',
      description: 'For a signed-in owner or approver of the decision’s workspace; an API key gets 403 human_session_required.',
    },
    auth: ['Session'],
    errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending', 'already_ruled'],
  })
  .input(z.strictObject(rulingFields))
  .output(decisionBody)
  .mutation(rule('declined'));
