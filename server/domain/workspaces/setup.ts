/**
 * First run without the demo (SEED_DEMO=false): while the installation has no user, each start
 * makes a one-time setup link and prints it (server/boot.ts). Opening it creates the first account
 * and its workspace; the first use ends every setup link, and with a user in the database no link
 * is made or accepted again. Only the tokens' hashes are stored.
 */
import { and, eq, gt, sql } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import { setupTokens, users } from '@/db/schema';
import { AppError } from '@/server/errors';
import type { Trace } from '../actor';
import { createWorkspace, type CreatedWorkspace } from './create-workspace';
import { generateToken, hashToken } from './invitations';

/** How long a printed setup link works (a start after that prints a new one). */
export const SETUP_TTL_HOURS = 24;
const SETUP_LOCK_KEY = 727_003;
const TOKEN_PATTERN = /^aws_setup_[A-Za-z0-9_-]{43}$/;

export const NO_SETUP = 'There is no setup to do here.';

async function hasUsers(db: Database | Tx): Promise<boolean> {
  const [any] = await db.select({ id: users.id }).from(users).limit(1);
  return Boolean(any);
}

/** A new setup link's token when the installation has no user yet; otherwise null. */
export async function issueSetupToken(db: Database, now = new Date()): Promise<string | null> {
  return db.transaction(async (tx) => {
    // Serialised with setup itself: a link is never issued after the first account exists.
    await tx.execute(sql`select pg_advisory_xact_lock(${SETUP_LOCK_KEY})`);
    if (await hasUsers(tx)) return null;
    const { token, hash } = generateToken('aws_setup_');
    await tx
      .insert(setupTokens)
      .values({ tokenHash: hash, createdAt: now, expiresAt: new Date(now.getTime() + SETUP_TTL_HOURS * 3_600_000) });
    return token;
  });
}

/** True when `token` is a live setup link of an installation that still has no user. */
export async function setupLinkIsLive(db: Database, token: string, now = new Date()): Promise<boolean> {
  if (!TOKEN_PATTERN.test(token)) return false;
  const [row] = await db
    .select({ hash: setupTokens.tokenHash })
    .from(setupTokens)
    .where(and(eq(setupTokens.tokenHash, hashToken(token)), gt(setupTokens.expiresAt, now)));
  return Boolean(row) && !(await hasUsers(db));
}

export interface SetupInput {
  workspaceName: string;
  email: string;
  displayName: string;
  passwordHash: string;
}

/** Creates the first account and workspace; the link, and every other, is spent. */
export async function completeSetup(tx: Tx, trace: Trace, token: string, input: SetupInput, now = new Date()): Promise<CreatedWorkspace> {
  if (!TOKEN_PATTERN.test(token)) throw new AppError('not_found', NO_SETUP);
  await tx.execute(sql`select pg_advisory_xact_lock(${SETUP_LOCK_KEY})`);
  const [live] = await tx
    .select({ hash: setupTokens.tokenHash })
    .from(setupTokens)
    .where(and(eq(setupTokens.tokenHash, hashToken(token)), gt(setupTokens.expiresAt, now)));
  if (!live || (await hasUsers(tx))) throw new AppError('not_found', NO_SETUP);
  await tx.delete(setupTokens);
  return createWorkspace(tx, trace, {
    name: input.workspaceName,
    owner: { email: input.email, displayName: input.displayName, passwordHash: input.passwordHash },
  });
}
