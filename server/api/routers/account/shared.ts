/**
 * What the procedures of accountRouter share: the fields of the link forms, and how a link is
 * spent. Spending an invitation or setup link is limited per client address like sign-in
 * (server/auth/attempt-limits.ts): a guesser gets SIGN_IN_MAX_ATTEMPTS tries a window. Reading one
 * counts nothing (readLink).
 */
import { z } from 'zod';
import { membershipRoles } from '@/db/schema';
import { countAttempt, settleSuccess, tokenBucket, tooManyAttempts } from '@/server/auth/attempt-limits';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { PASSWORD_MAX } from '@/server/domain/accounts/accounts';
import { systemTrace } from '@/server/domain/actor';
import { acceptInvitation, INVALID_LINK, type Acceptor } from '@/server/domain/workspaces/invitations';
import { AppError } from '@/server/errors';
import { countRefusal } from '@/server/metrics';
import { clientAddress } from '@/server/rate-limits';
import type { ApiContext } from '../../trpc';
import { text } from '../../schemas';

export const token = z.string().max(200);
export const password = z.string().max(PASSWORD_MAX);
export const displayName = text(1, 100);

/** What accepting an invitation answers: where the person now belongs, and as what. */
export const joinedOutput = z.object({ workspace_id: z.uuid(), email: z.string(), role: z.enum(membershipRoles) });

/**
 * Runs `use` with a token attempt counted for the client's address; a token that turns out good
 * gives its attempt back. Past the limit, the token is not even looked up.
 */
export async function withTokenAttempt<T>(ctx: ApiContext, use: () => Promise<T | null>, invalid: () => AppError): Promise<T> {
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
 * Reading what a link offers (the invitation and setup pages, GET) counts no attempt: a GET can be
 * made by any page a person visits (`<img src=…/invite/…>`), and counting it would let that page
 * lock the person's address out of their own links. Guessing by reading is hopeless anyway (a
 * token is 256 random bits); spending a link (a POST from the app's own pages) is what counts.
 */
export function readLink<T>(found: T | null, invalid: () => AppError): T {
  if (found === null) throw invalid();
  return found;
}

/**
 * Accepting spends the link; a refusal after the link was found (wrong account) still counts as
 * good. `who` is made once the attempt is allowed: a new account's password is hashed only then.
 */
export async function accept(ctx: ApiContext, tokenValue: string, who: () => Promise<Acceptor>) {
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
  return { workspace_id: joined.workspaceId, email: joined.email, role: joined.role };
}
