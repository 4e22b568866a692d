/** Removes a member (owners), revoking the API keys they owned in the workspace. */
import { z } from 'zod';
import { removeMember } from '@/server/domain/workspaces/members';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';
import { removedOutput } from './shared';

export const removeProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), user_id: id() }))
  .output(removedOutput)
  .mutation(({ input, actor, write }) => write((tx) => removeMember(tx, actor, { userId: input.user_id })));
