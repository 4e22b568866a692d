/** What an invitation link offers (workspace, role, email), or 404 for a link that is not good. A read counts nothing (readLink). */
import { z } from 'zod';
import { findPendingInvitation, INVALID_LINK } from '@/server/domain/workspaces/invitations';
import { AppError } from '@/server/errors';
import { publicProcedure } from '../../trpc';
import { readLink, token } from './shared';

export const invitationProcedure = publicProcedure
  .input(z.strictObject({ token }))
  .query(async ({ ctx, input }) =>
    readLink(await findPendingInvitation(ctx.runtime.db, input.token), () => new AppError('not_found', INVALID_LINK)),
  );
