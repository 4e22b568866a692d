/**
 * Changes the signed-in user's password; every session of theirs ends (the page signs in again).
 * The current password is checked under the account's sign-in limit: a stolen session cannot be
 * used to guess it.
 */
import { z } from 'zod';
import { accountBucket, countAttempt, settleSuccess, tooManyAttempts } from '@/server/auth/attempt-limits';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { changePassword } from '@/server/domain/accounts/accounts';
import { humanProcedure } from '../../trpc';
import { password } from './shared';

export const changePasswordProcedure = humanProcedure
  .input(z.strictObject({ current: password, next: password }))
  .output(z.object({ changed: z.boolean() }))
  .mutation(async ({ ctx, input }) => {
    const bucket = accountBucket(ctx.principal.email);
    const verdict = await countAttempt(ctx.runtime.db, [bucket], attemptLimitsOf(ctx.runtime));
    if (!verdict.allowed) throw tooManyAttempts(verdict, 'password attempts');
    await changePassword(ctx.runtime.db, ctx.principal.userId, { current: input.current, next: input.next });
    await settleSuccess(ctx.runtime.db, [bucket], []);
    return { changed: true };
  });
