/** Someone new accepts an invitation: the account is made with the invitation's email; the page then signs them in. */
import { z } from 'zod';
import { hashPassword } from '@/server/auth/passwords';
import { checkNewPassword } from '@/server/domain/accounts/accounts';
import { publicProcedure } from '../../trpc';
import { accept, displayName, joinedOutput, password, token } from './shared';

export const joinWithInvitationProcedure = publicProcedure
  .input(z.strictObject({ token, display_name: displayName, password }))
  .output(joinedOutput)
  .mutation(async ({ ctx, input }) => {
    checkNewPassword(input.password);
    return accept(ctx, input.token, async () => ({
      kind: 'new',
      displayName: input.display_name,
      passwordHash: await hashPassword(input.password),
    }));
  });
