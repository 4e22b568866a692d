/** POST /decisions/{id}/cancel: Cancel a decision (signed-in owners). */
import { z } from 'zod';
import { ruleOnDecision } from '@/server/domain/decisions/rule';
import { loadDecisionView } from '@/server/domain/decisions/view';
import { checkedInTransaction, runMutation } from '../../mutation';
import { humanProcedure } from '../../trpc';
import { decisionBody, rulingFields, locate, settleTimeout } from './shared';

export const cancelProcedure = humanProcedure
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
  .output(checkedInTransaction(decisionBody))
  .mutation(async ({ ctx, input }) => {
    const { actor, row } = await locate(ctx, input.id, ['owner']);
    await settleTimeout(ctx, row);
    return runMutation(ctx, actor, { status: 200, output: decisionBody }, async (tx) => {
      await ruleOnDecision(tx, actor, input.id, { outcome: 'cancelled', note: input.note });
      return { decision: (await loadDecisionView(tx, row.workspaceId, row.id))! };
    });
  });
