/** POST /decisions/{id}/decline: Decline a decision (signed-in humans). */
import { z } from 'zod';
import { RULING_ROLES, ruleOnDecision } from '@/server/domain/decisions/rule';
import { loadDecisionView } from '@/server/domain/decisions/view';
import { checkedInTransaction, runMutation } from '../../mutation';
import { humanProcedure } from '../../trpc';
import { decisionBody, rulingFields, locate, settleTimeout } from './shared';

export const declineProcedure = humanProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions/{id}/decline',
      tags: ['decisions'],
      summary: 'Decline a decision (signed-in humans)',
      description: 'For a signed-in owner or approver of the decision’s workspace; an API key gets 403 human_session_required.',
    },
    auth: ['Session'],
    errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending'],
  })
  .input(z.strictObject(rulingFields))
  .output(checkedInTransaction(decisionBody))
  .mutation(async ({ ctx, input }) => {
    const { actor, row } = await locate(ctx, input.id, RULING_ROLES);
    await settleTimeout(ctx, row);
    return runMutation(ctx, actor, { status: 200, output: decisionBody }, async (tx) => {
      await ruleOnDecision(tx, actor, input.id, { outcome: 'declined', note: input.note });
      return { decision: (await loadDecisionView(tx, row.workspaceId, row.id))! };
    });
  });
