/** True when the setup link is good (the page is 404 otherwise). A read counts nothing (readLink). */
import { z } from 'zod';
import { NO_SETUP, setupLinkIsLive } from '@/server/domain/workspaces/setup';
import { AppError } from '@/server/errors';
import { publicProcedure } from '../../trpc';
import { readLink, token } from './shared';

export const setupLinkProcedure = publicProcedure
  .input(z.strictObject({ token }))
  .query(async ({ ctx, input }) =>
    readLink(
      (await setupLinkIsLive(ctx.runtime.db, input.token)) ? { ok: true as const } : null,
      () => new AppError('not_found', NO_SETUP),
    ),
  );
