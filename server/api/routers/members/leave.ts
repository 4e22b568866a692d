/** The signed-in user leaves the workspace (not its last owner). */
import { z } from 'zod';
import { removeMember } from '@/server/domain/workspaces/members';
import { humanMemberProcedure } from '../../procedures';
import { id } from '../../schemas';
import { removedOutput } from './shared';

export const leaveProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id() }))
  .output(removedOutput)
  .mutation(({ actor, write }) => write((tx) => removeMember(tx, actor, { userId: actor.id })));
