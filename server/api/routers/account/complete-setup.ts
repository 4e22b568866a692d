/** Creates the first account and workspace of an empty installation; the link is spent. */
import { z } from 'zod';
import { hashPassword } from '@/server/auth/passwords';
import { checkNewPassword } from '@/server/domain/accounts/accounts';
import { systemTrace } from '@/server/domain/actor';
import { completeSetup, NO_SETUP } from '@/server/domain/workspaces/setup';
import { AppError } from '@/server/errors';
import { publicProcedure } from '../../trpc';
import { text } from '../../schemas';
import { displayName, password, token, withTokenAttempt } from './shared';

export const completeSetupProcedure = publicProcedure
  .input(z.strictObject({ token, workspace_name: text(1, 100), display_name: displayName, email: z.email().max(320), password }))
  .output(z.object({ workspace_id: z.uuid(), email: z.string() }))
  .mutation(async ({ ctx, input }) => {
    checkNewPassword(input.password);
    const created = await withTokenAttempt(
      ctx,
      async () => {
        // Hashed once the attempt is allowed (the limit refuses before any argon2 work).
        const passwordHash = await hashPassword(input.password);
        try {
          return await ctx.runtime.db.transaction((tx) =>
            completeSetup(tx, systemTrace(ctx.requestId), input.token, {
              workspaceName: input.workspace_name,
              email: input.email,
              displayName: input.display_name,
              passwordHash,
            }),
          );
        } catch (err) {
          if (err instanceof AppError && err.code === 'not_found') return null;
          throw err;
        }
      },
      () => new AppError('not_found', NO_SETUP),
    );
    return { workspace_id: created.workspaceId, email: input.email.trim().toLowerCase() };
  });
