/** Revokes a key of the workspace (owners); one already revoked is left as it is (`revoked: false`). */
import { z } from 'zod';
import { revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

export const revokeProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), key_id: id() }))
  .output(z.object({ revoked: z.boolean() }))
  .mutation(({ input, actor, write }) => write((tx) => revokeApiKey(tx, actor, { keyId: input.key_id })));
