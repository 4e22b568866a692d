/**
 * The people of a workspace: adding one with a role (creating the account on first sight of the
 * email), changing a role, removing someone, leaving. Each change is one ledger event
 * (membership.created, membership.role_changed, membership.removed) with no secret in it.
 *
 * A workspace always keeps at least one owner: the last one cannot be demoted, removed or leave
 * (409 conflict). Every change takes the workspace's append lock first, so two owners demoting each
 * other at once are serialised and the second sees the first's change.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { apiKeys, memberships, users, type MembershipRole } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { membershipId } from './ids';

export interface AddMemberInput {
  email: string;
  displayName: string;
  /** Needed when the user is new; an existing user keeps their password. */
  passwordHash?: string;
  role: MembershipRole;
  /** The id a new user gets (default: a fresh one). */
  newUserId?: string;
}

export const normalEmail = (email: string) => email.trim().toLowerCase();

export async function addMember(tx: Tx, actor: Actor, input: AddMemberInput): Promise<{ userId: string; userCreated: boolean }> {
  const email = normalEmail(input.email);
  const [existing] = await tx.select({ id: users.id, displayName: users.displayName }).from(users).where(eq(users.email, email));
  const userId = existing?.id ?? input.newUserId ?? randomUUID();
  // The rows and their event carry the same time (a restore gives the rows the event's).
  const now = new Date();
  if (!existing) {
    if (!input.passwordHash) throw new AppError('validation_failed', 'A new user needs a password.');
    await tx.insert(users).values({ id: userId, email, displayName: input.displayName, passwordHash: input.passwordHash, createdAt: now });
  }
  const inserted = await tx
    .insert(memberships)
    .values({ workspaceId: actor.workspaceId, userId, role: input.role, createdAt: now })
    .onConflictDoNothing()
    .returning({ userId: memberships.userId });
  if (inserted.length === 0) throw new AppError('conflict', `${email} is already a member of this workspace.`);
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'membership',
        aggregateId: membershipId(actor.workspaceId, userId),
        eventType: 'membership.created',
        payload: {
          user_id: userId,
          email,
          display_name: existing?.displayName ?? input.displayName,
          role: input.role,
          user_created: !existing,
        },
      },
    ],
    now,
  );
  return { userId, userCreated: !existing };
}

export interface Member {
  user_id: string;
  email: string;
  display_name: string;
  role: MembershipRole;
  joined_at: string;
  last_sign_in_at: string | null;
}

/** The members of the actor's workspace, owners first, then by when they joined. */
export async function listMembers(tx: Tx, workspaceId: string): Promise<Member[]> {
  const rows = await tx
    .select({
      userId: users.id,
      email: users.email,
      displayName: users.displayName,
      role: memberships.role,
      joinedAt: memberships.createdAt,
      lastSignInAt: users.lastSignInAt,
    })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(eq(memberships.workspaceId, workspaceId))
    .orderBy(sql`case ${memberships.role} when 'owner' then 0 when 'approver' then 1 else 2 end`, asc(memberships.createdAt));
  return rows.map((r) => ({
    user_id: r.userId,
    email: r.email,
    display_name: r.displayName,
    role: r.role,
    joined_at: r.joinedAt.toISOString(),
    last_sign_in_at: r.lastSignInAt?.toISOString() ?? null,
  }));
}

/** The member's current role, under the workspace lock; 404 when they are not a member. */
async function lockedMember(tx: Tx, workspaceId: string, userId: string): Promise<{ role: MembershipRole; email: string }> {
  await lockWorkspaceLedger(tx, workspaceId);
  const [row] = await tx
    .select({ role: memberships.role, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.userId, userId)));
  if (!row) throw new AppError('not_found', 'No such member in this workspace.');
  return row;
}

async function assertAnotherOwner(tx: Tx, workspaceId: string, userId: string, doing: string): Promise<void> {
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.role, 'owner'), sql`${memberships.userId} <> ${userId}`));
  if (!row || Number(row.n) === 0) {
    throw new AppError('conflict', `A workspace keeps at least one owner: make someone else an owner before ${doing}.`, {
      reason: 'last_owner',
    });
  }
}

/** Why a member's keys were revoked with a change to their membership (the api_key.revoked event's `reason`). */
type KeysRevokedFor = 'owner_removed' | 'owner_demoted';

/**
 * Revokes the keys `userId` owns in the workspace: the rows, and an api_key.revoked event for each.
 * Only owners make keys, and a key acts with an owner's powers (work, decisions, webhooks), so a
 * key never outlives its owner's being one.
 */
async function revokeKeysOf(tx: Tx, workspaceId: string, userId: string, reason: KeysRevokedFor) {
  const revoked = await tx
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.workspaceId, workspaceId), eq(apiKeys.ownerUserId, userId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id, prefix: apiKeys.prefix });
  return revoked.map((k): NewEvent => ({
    aggregateType: 'api_key',
    aggregateId: k.id,
    eventType: 'api_key.revoked',
    payload: { id: k.id, prefix: k.prefix, reason },
  }));
}

/**
 * Changes a member's role. The same role again changes nothing and appends nothing. An owner who
 * stops being one loses the API keys they made here (revoked with the change, in its events):
 * promoting them again brings none back.
 */
export async function changeRole(
  tx: Tx,
  actor: Actor,
  input: { userId: string; role: MembershipRole },
): Promise<{ changed: boolean; revokedKeys: number }> {
  const member = await lockedMember(tx, actor.workspaceId, input.userId);
  if (member.role === input.role) return { changed: false, revokedKeys: 0 };
  if (member.role === 'owner') await assertAnotherOwner(tx, actor.workspaceId, input.userId, 'changing the last owner’s role');
  await tx
    .update(memberships)
    .set({ role: input.role })
    .where(and(eq(memberships.workspaceId, actor.workspaceId), eq(memberships.userId, input.userId)));
  const revoked = member.role === 'owner' ? await revokeKeysOf(tx, actor.workspaceId, input.userId, 'owner_demoted') : [];
  await appendEvents(tx, actor, [
    {
      aggregateType: 'membership',
      aggregateId: membershipId(actor.workspaceId, input.userId),
      eventType: 'membership.role_changed',
      payload: { user_id: input.userId, email: member.email, from: member.role, to: input.role },
    },
    ...revoked,
  ]);
  return { changed: true, revokedKeys: revoked.length };
}

/**
 * Under the workspace's lock, that `userId` is an owner of it now: a key is made for an owner only,
 * and a demotion committed while the key was being made would otherwise leave it standing.
 */
export async function assertOwnerNow(tx: Tx, workspaceId: string, userId: string): Promise<void> {
  const member = await lockedMember(tx, workspaceId, userId).catch(() => null);
  if (member?.role !== 'owner') throw new AppError('forbidden', 'Only an owner of this workspace can hold an API key.');
}

/**
 * Removes a member (or, when the actor is that member, lets them leave). The API keys they own in
 * this workspace are revoked with them: a key acts for the human accountable for it, and someone
 * who has left can no longer answer for what it does.
 */
export async function removeMember(tx: Tx, actor: Actor, input: { userId: string }): Promise<{ revokedKeys: number }> {
  const member = await lockedMember(tx, actor.workspaceId, input.userId);
  const leaving = actor.type === 'human' && actor.id === input.userId;
  if (member.role === 'owner') await assertAnotherOwner(tx, actor.workspaceId, input.userId, leaving ? 'you leave' : 'removing them');
  await tx.delete(memberships).where(and(eq(memberships.workspaceId, actor.workspaceId), eq(memberships.userId, input.userId)));
  const revoked = await revokeKeysOf(tx, actor.workspaceId, input.userId, 'owner_removed');
  await appendEvents(tx, actor, [
    {
      aggregateType: 'membership',
      aggregateId: membershipId(actor.workspaceId, input.userId),
      eventType: 'membership.removed',
      payload: { user_id: input.userId, email: member.email, role: member.role, left: leaving },
    },
    ...revoked,
  ]);
  return { revokedKeys: revoked.length };
}
