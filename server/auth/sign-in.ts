/**
 * Checking a sign-in: the attempt is counted for the account and the client address first
 * (server/auth/attempt-limits.ts); past the limit it is refused before any password is hashed.
 * Unknown emails and wrong passwords take the same path, the same time and the same answer.
 */
import { eq } from 'drizzle-orm';
import { randomBytes } from 'node:crypto';
import { users } from '@/db/schema';
import { clientAddress } from '@/server/rate-limits';
import type { Runtime } from '@/server/runtime';
import { accountBucket, addressBucket, countAttempt, settleSuccess, tooManyAttempts, type AttemptLimits } from './attempt-limits';
import { hashPassword, verifyPassword } from './passwords';
import { countRefusal } from '@/server/metrics';

// Verifying against a real hash when the email is unknown keeps both paths equally slow, so timing
// does not tell which emails have accounts.
let dummyHash: Promise<string> | undefined;
const dummy = () => (dummyHash ??= hashPassword(randomBytes(16).toString('hex')));

export const attemptLimitsOf = (runtime: Runtime): AttemptLimits => ({
  max: runtime.env.SIGN_IN_MAX_ATTEMPTS,
  windowMinutes: runtime.env.SIGN_IN_WINDOW_MINUTES,
});

export interface SignedIn {
  id: string;
  email: string;
  name: string;
  epoch: number;
}

/**
 * The user `email` and `password` name, or null. Throws AppError rate_limited ("Too many sign-in
 * attempts. Try again in N minutes.") when the account or the address is over its limit.
 */
export async function checkSignIn(runtime: Runtime, email: string, password: string, headers: Headers): Promise<SignedIn | null> {
  const normal = email.trim().toLowerCase();
  if (!normal || !password || normal.length > 320 || password.length > 1024) return null;
  const buckets = [accountBucket(normal), addressBucket(clientAddress(headers, runtime.env.TRUSTED_PROXY_HOPS))] as const;
  const verdict = await countAttempt(runtime.db, buckets, attemptLimitsOf(runtime));
  if (!verdict.allowed) {
    countRefusal('sign_in_locked');
    throw tooManyAttempts(verdict, 'sign-in attempts');
  }
  const [user] = await runtime.db
    .select({ id: users.id, email: users.email, name: users.displayName, hash: users.passwordHash, epoch: users.sessionEpoch })
    .from(users)
    .where(eq(users.email, normal));
  const ok = await verifyPassword(user?.hash ?? (await dummy()), password);
  if (!user || !ok) {
    countRefusal('sign_in_failed');
    return null;
  }
  await settleSuccess(runtime.db, [buckets[0]], [buckets[1]]);
  await runtime.db.update(users).set({ lastSignInAt: new Date() }).where(eq(users.id, user.id));
  return { id: user.id, email: user.email, name: user.name, epoch: user.epoch };
}
