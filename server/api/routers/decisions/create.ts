/** POST /decisions: Raise a decision for a human ruling. */
import { createDecision } from '@/server/domain/decisions/create-decision';
import { RULING_ROLES } from '@/server/domain/decisions/rule';
import { checkedInTransaction, runMutation } from '../../mutation';
import { actorIn, memberProcedure } from '../../trpc';
import { mutationHeaders } from '../../schemas';
import { decisionBody, DecisionBody, createInput } from './shared';

export const createProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions',
      tags: ['decisions'],
      summary: 'Raise a decision for a human ruling',
      description:
        'Only `workspace_id` and `title` are required; the decision is then `option_select`, `urgent`, ' +
        '`blocks_task: false`, `pending`, with the options approve / decline. With an `Idempotency-Key`, the same key ' +
        'and body return the original decision (200); a different body is 422 idempotency_conflict.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original decision.' },
    errorCodes: ['forbidden', 'not_found', 'invalid_idempotency_key', 'idempotency_conflict', 'idempotency_in_progress'],
  })
  .input(createInput)
  .output(checkedInTransaction(decisionBody))
  .mutation(({ ctx, input }) => {
    const { workspace_id: workspaceId, ...rest } = input;
    const actor = actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden', roles: RULING_ROLES });
    return runMutation<DecisionBody>(ctx, actor, { status: 201, replay: (body) => body, output: decisionBody }, async (tx) => ({
      decision: await createDecision(tx, actor, rest),
    }));
  });
