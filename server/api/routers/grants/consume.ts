/** POST /grants/consume: Use a grant, once. */
import { z } from 'zod';
import { presentGrant } from '@/server/domain/grants/consume';
import { signingOf } from '@/server/runtime';
import { agentProcedure } from '../../procedures';
import { apiMeta, timestamp } from '../../schemas';

const consumeInput = z.strictObject({
  token: z
    .string()
    .min(1)
    .max(8192)
    .meta({ description: 'The grant’s token, as GET /decisions/{id} gave it (`decision.grant.token`) to the key it is for.' }),
  action_digest: z
    .string()
    .regex(/^sha256:[0-9a-f]{64}$/)
    .meta({
      description:
        'The digest of the action about to run: `sha256:` + hex(SHA-256(JCS({ tool, arguments, target? }))) (RFC 8785). ' +
        'Compute it from what you will run, never copy it from the grant.',
    }),
});

const consumeOutput = z
  .object({
    data: z.object({ grant_id: z.uuid(), decision_id: z.uuid(), consumed_at: timestamp() }),
    meta: apiMeta,
  })
  .meta({ id: 'GrantConsumed' });

export const consumeProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/grants/consume',
      tags: ['grants'],
      summary: 'Use a grant, once',
      description:
        'For the tool server about to run an approved action, with the API key the grant is for (its token’s `azp`): ' +
        'the key that raised the decision, or, for a decision a person raised, a key of that person. Any other key is ' +
        '403 grant_not_yours and nothing is used up or written. The first ' +
        'presentation whose action_digest is the approved one uses the grant up (a `grant.consumed` event). After it, ' +
        'every presentation is 409 grant_used. Another action’s digest is 409 grant_mismatch and the grant stays ' +
        'usable; past its expiry, 409 grant_expired; its target task changed since the decision was raised (or since ' +
        'the approval moved it on), 409 approval_stale and the grant is void. Each of those three writes a ' +
        '`grant.refused` event. A token this service did not sign for the grant it names is 400 validation_failed.',
    },
    errorCodes: ['not_found', 'grant_not_yours', 'grant_used', 'grant_mismatch', 'grant_expired', 'approval_stale'],
  })
  .input(consumeInput)
  .output(consumeOutput)
  .mutation(async ({ ctx, actor, input }) => {
    // Not `write`: a refusal is recorded (grant.refused) and answered with its 409 once that has committed.
    const presented = await ctx.runtime.db.transaction((tx) => presentGrant(tx, actor, input, signingOf(ctx.runtime)), {
      group: actor.workspaceId,
    });
    if ('refused' in presented) throw presented.refused;
    return { data: presented.consumed, meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId } };
  });
