/** Revokes a pending invitation (owners); one no longer pending is left as it is (`revoked: false`). */
import { z } from 'zod';
import { revokeInvitation } from '@/server/domain/workspaces/invitations';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

export const revokeInvitationProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), invitation_id: id() }))
  .output(z.object({ revoked: z.boolean() }))
  .mutation(({ input, actor, write }) => write((tx) => revokeInvitation(tx, actor, { invitationId: input.invitation_id })));
