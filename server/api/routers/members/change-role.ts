/** Changes a member's role (owners); the API keys a member can no longer own here are revoked with it. */
import { z } from 'zod';
import { changeRole } from '@/server/domain/workspaces/members';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';
import { role } from './shared';

export const changeRoleProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), user_id: id(), role }))
  .output(z.object({ changed: z.boolean(), revokedKeys: z.int().min(0) }))
  .mutation(({ input, actor, write }) => write((tx) => changeRole(tx, actor, { userId: input.user_id, role: input.role })));
