/** A signed-in user accepts an invitation made out to their email. */
import { z } from 'zod';
import { humanProcedure } from '../../trpc';
import { accept, joinedOutput, token } from './shared';

export const acceptInvitationProcedure = humanProcedure
  .input(z.strictObject({ token }))
  .output(joinedOutput)
  .mutation(({ ctx, input }) => accept(ctx, input.token, async () => ({ kind: 'user', userId: ctx.principal.userId })));
