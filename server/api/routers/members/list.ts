/** The members and pending invitations of a workspace (owners). */
import { z } from 'zod';
import { listPendingInvitations } from '@/server/domain/workspaces/invitations';
import { listMembers } from '@/server/domain/workspaces/members';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

export const listProcedure = humanOwnerProcedure.input(z.strictObject({ workspace_id: id() })).query(async ({ ctx, actor }) => {
  const { db } = ctx.runtime;
  return db.transaction(async (tx) => ({
    members: await listMembers(tx, actor.workspaceId),
    invitations: await listPendingInvitations(tx, actor.workspaceId),
  }));
});
