/**
 * A person's own account and the links that bring people in, for the web interface: changing
 * one's password, opening and accepting an invitation, and the one-time setup of an empty
 * installation. Invitation and setup tokens are limited per client address like sign-in
 * (server/auth/attempt-limits.ts): a guesser gets SIGN_IN_MAX_ATTEMPTS tries a window.
 */
import { z } from 'zod';
import { accountBucket, countAttempt, settleSuccess, tokenBucket, tooManyAttempts } from '@/server/auth/attempt-limits';
import { hashPassword } from '@/server/auth/passwords';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { changePassword, checkNewPassword, PASSWORD_MAX } from '@/server/domain/accounts/accounts';
import { systemTrace } from '@/server/domain/actor';
import { acceptInvitation, findPendingInvitation, INVALID_LINK, type Acceptor } from '@/server/domain/workspaces/invitations';
import { completeSetup, NO_SETUP, setupLinkIsLive } from '@/server/domain/workspaces/setup';
import { AppError } from '@/server/errors';
import { countRefusal } from '@/server/metrics';
import { clientAddress } from '@/server/rate-limits';
import { humanProcedure, publicProcedure, router, type ApiContext } from '../trpc';
import { text } from '../schemas';

const token = z.string().max(200);
const password = z.string().max(PASSWORD_MAX);
const displayName = text(1, 100);

/**
 * Runs `use` with a token attempt counted for the client's address; a token that turns out good
 * gives its attempt back. Past the limit, the token is not even looked up.
 */
async function withTokenAttempt<T>(ctx: ApiContext, use: () => Promise<T | null>, invalid: () => AppError): Promise<T> {
  const bucket = tokenBucket(clientAddress(ctx.headers, ctx.runtime.env.TRUSTED_PROXY_HOPS));
  const verdict = await countAttempt(ctx.runtime.db, [bucket], attemptLimitsOf(ctx.runtime));
  if (!verdict.allowed) {
    countRefusal('link_attempts_locked');
    throw tooManyAttempts(verdict, 'attempts with invitation or setup links');
  }
  const result = await use();
  if (result === null) throw invalid();
  await settleSuccess(ctx.runtime.db, [], [bucket]);
  return result;
}

/**
 * Accepting spends the link; a refusal after the link was found (wrong account) still counts as
 * good. `who` is made once the attempt is allowed: a new account's password is hashed only then.
 */
async function accept(ctx: ApiContext, tokenValue: string, who: () => Promise<Acceptor>) {
  const joined = await withTokenAttempt(
    ctx,
    async () => {
      const acceptor = await who();
      try {
        return await ctx.runtime.db.transaction((tx) => acceptInvitation(tx, systemTrace(ctx.requestId), tokenValue, acceptor));
      } catch (err) {
        if (err instanceof AppError && err.code === 'not_found') return null;
        throw err;
      }
    },
    () => new AppError('not_found', INVALID_LINK),
  );
  ctx.runtime.wakeups.committed(joined.workspaceId);
  return { workspace_id: joined.workspaceId, email: joined.email, role: joined.role };
}

export const accountRouter = router({
  /**
   * Changes the signed-in user's password; every session of theirs ends (the page signs in again).
   * The current password is checked under the account's sign-in limit: a stolen session cannot be
   * used to guess it.
   */
  changePassword: humanProcedure.input(z.strictObject({ current: password, next: password })).mutation(async ({ ctx, input }) => {
    const bucket = accountBucket(ctx.principal.email);
    const verdict = await countAttempt(ctx.runtime.db, [bucket], attemptLimitsOf(ctx.runtime));
    if (!verdict.allowed) throw tooManyAttempts(verdict, 'password attempts');
    await changePassword(ctx.runtime.db, ctx.principal.userId, { current: input.current, next: input.next });
    await settleSuccess(ctx.runtime.db, [bucket], []);
    return { changed: true };
  }),

  /** What an invitation link offers (workspace, role, email), or 404 for a link that is not good. */
  invitation: publicProcedure.input(z.strictObject({ token })).query(({ ctx, input }) =>
    withTokenAttempt(
      ctx,
      () => findPendingInvitation(ctx.runtime.db, input.token),
      () => new AppError('not_found', INVALID_LINK),
    ),
  ),

  /** A signed-in user accepts an invitation made out to their email. */
  acceptInvitation: humanProcedure
    .input(z.strictObject({ token }))
    .mutation(({ ctx, input }) => accept(ctx, input.token, async () => ({ kind: 'user', userId: ctx.principal.userId }))),

  /** Someone new accepts: the account is made with the invitation's email; the page then signs them in. */
  joinWithInvitation: publicProcedure
    .input(z.strictObject({ token, display_name: displayName, password }))
    .mutation(async ({ ctx, input }) => {
      checkNewPassword(input.password);
      return accept(ctx, input.token, async () => ({
        kind: 'new',
        displayName: input.display_name,
        passwordHash: await hashPassword(input.password),
      }));
    }),

  /** True when the setup link is good (the page is 404 otherwise). */
  setupLink: publicProcedure.input(z.strictObject({ token })).query(({ ctx, input }) =>
    withTokenAttempt(
      ctx,
      async () => ((await setupLinkIsLive(ctx.runtime.db, input.token)) ? { ok: true as const } : null),
      () => new AppError('not_found', NO_SETUP),
    ),
  ),

  /** Creates the first account and workspace of an empty installation; the link is spent. */
  completeSetup: publicProcedure
    .input(z.strictObject({ token, workspace_name: text(1, 100), display_name: displayName, email: z.email().max(320), password }))
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
      ctx.runtime.wakeups.committed(created.workspaceId);
      return { workspace_id: created.workspaceId, email: input.email.trim().toLowerCase() };
    }),
});
