/** Creates a key owned by the signed-in owner; the secret is in this response only. */
import { z } from 'zod';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { assertOwnerNow } from '@/server/domain/workspaces/members';
import { humanOwnerProcedure } from '../../procedures';
import { id, text } from '../../schemas';

export const createProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), name: text(1, 100) }))
  .output(
    z.object({
      id: z.uuid(),
      name: z.string(),
      prefix: z.string(),
      workspaceId: z.uuid(),
      secret: z.string().meta({ description: 'The whole key: shown once, only its hash is kept.' }),
    }),
  )
  .mutation(({ actor, input, write }) =>
    write(async (tx) => {
      // The session's role was read before this transaction: a demotion committed since must not leave a key standing.
      await assertOwnerNow(tx, actor.workspaceId, actor.id);
      return createApiKey(tx, actor, { name: input.name, ownerUserId: actor.id });
    }),
  );
