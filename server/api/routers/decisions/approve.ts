/** POST /decisions/{id}/approve: Approve a decision (signed-in humans). */
import { z } from 'zod';
import { RULING_ROLES, ruleOnDecision } from '@/server/domain/decisions/rule';
import { loadDecisionView } from '@/server/domain/decisions/view';
import { checkedInTransaction, runMutation } from '../../mutation';
import { humanProcedure } from '../../trpc';
import { text } from '../../schemas';
import { decisionBody, rulingFields, locate, settleTimeout } from './shared';

export const approveProcedure = humanProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions/{id}/approve',
      tags: ['decisions'],
      summary: 'Approve a decision (signed-in humans)',
      description:
        'For a signed-in owner or approver of the decision’s workspace, from the app’s own pages; an API key gets 403 ' +
        'human_session_required. option_select: choose exactly one option (the default approve / decline pair needs ' +
        'none); option_multiselect: at least one. Whoever raised a decision cannot rule on it.',
    },
    auth: ['Session'],
    errorCodes: ['forbidden', 'human_session_required', 'not_found', 'decision_not_pending'],
  })
  .input(z.strictObject({ ...rulingFields, option_ids: z.array(text(1, 120)).max(20).optional() }))
  .output(checkedInTransaction(decisionBody))
  .mutation(async ({ ctx, input }) => {
    const { actor, row } = await locate(ctx, input.id, RULING_ROLES);
    await settleTimeout(ctx, row);
    return runMutation(ctx, actor, { status: 200, output: decisionBody }, async (tx) => {
      await ruleOnDecision(tx, actor, input.id, { outcome: 'approved', option_ids: input.option_ids, note: input.note });
      return { decision: (await loadDecisionView(tx, row.workspaceId, row.id))! };
    });
  });
