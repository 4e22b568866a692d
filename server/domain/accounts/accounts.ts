/**
 * A person's own account: changing the password (the current one required; every session of
 * theirs issued so far ends) and an operator's reset to a one-time password. Passwords are
 * argon2id hashes; no password or hash reaches the ledger or a log line.
 */
import { eq, sql } from 'drizzle-orm';
import type { Database } from '@/db';
import { users } from '@/db/schema';
import { hashPassword, verifyPassword } from '@/server/auth/passwords';
import { AppError } from '@/server/errors';

/** What every new password must meet (NIST 800-63B: length, not composition rules). */
const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 1024;

export function checkNewPassword(password: string): void {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw new AppError('validation_failed', `A password has ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`, {
      issues: [{ path: 'password', message: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters` }],
    });
  }
}

/**
 * Sets a new password and ends every session issued so far (the session epoch moves on): a session
 * stolen before the change stops working. The caller signs in again with the new password.
 */
async function setPassword(db: Database, userId: string, password: string): Promise<void> {
  const hash = await hashPassword(password);
  await db
    .update(users)
    .set({ passwordHash: hash, sessionEpoch: sql`${users.sessionEpoch} + 1` })
    .where(eq(users.id, userId));
}

/** The signed-in user changes their password; the current one is required. */
export async function changePassword(db: Database, userId: string, input: { current: string; next: string }): Promise<void> {
  checkNewPassword(input.next);
  await checkCurrentPassword(db, userId, input.current, 'current');
  await setPassword(db, userId, input.next);
}

/**
 * The user's password, asked again before what a stolen session must not do (change the password,
 * add a passkey that would outlive the session); 400 at `path` when it is not right.
 */
export async function checkCurrentPassword(db: Database, userId: string, password: string, path: string): Promise<void> {
  const [user] = await db.select({ hash: users.passwordHash }).from(users).where(eq(users.id, userId));
  if (!user || !(await verifyPassword(user.hash, password))) {
    throw new AppError('validation_failed', 'The current password is not right.', {
      issues: [{ path, message: 'not the current password' }],
    });
  }
}

/** An operator resets a password (npm run user:reset-password): the user's sessions end. */
export async function resetPassword(db: Database, email: string, password: string): Promise<{ userId: string } | null> {
  const [user] = await db.select({ id: users.id }).from(users).where(eq(users.email, email.trim().toLowerCase()));
  if (!user) return null;
  await setPassword(db, user.id, password);
  return { userId: user.id };
}
