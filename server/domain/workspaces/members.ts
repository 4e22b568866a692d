/** Adding a human to a workspace with a role (creating the user on first sight of the email). */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { memberships, users, type MembershipRole } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { membershipId } from './ids';

export interface AddMemberInput {
  email: string;
  displayName: string;
  /** Needed when the user is new; an existing user keeps their password. */
  passwordHash?: string;
  role: MembershipRole;
}

export async function addMember(tx: Tx, actor: Actor, input: AddMemberInput): Promise<{ userId: string; userCreated: boolean }> {
  const email = input.email.trim().toLowerCase();
  const [existing] = await tx.select({ id: users.id }).from(users).where(eq(users.email, email));
  const userId = existing?.id ?? randomUUID();
  if (!existing) {
    if (!input.passwordHash) throw new AppError('validation_failed', 'A new user needs a password.');
    await tx.insert(users).values({ id: userId, email, displayName: input.displayName, passwordHash: input.passwordHash });
  }
  const inserted = await tx
    .insert(memberships)
    .values({ workspaceId: actor.workspaceId, userId, role: input.role })
    .onConflictDoNothing()
    .returning({ userId: memberships.userId });
  if (inserted.length === 0) throw new AppError('validation_failed', `${email} is already a member of this workspace.`);
  await appendEvents(tx, actor, [
    {
      aggregateType: 'membership',
      aggregateId: membershipId(actor.workspaceId, userId),
      eventType: 'membership.created',
      payload: { user_id: userId, email, display_name: input.displayName, role: input.role, user_created: !existing },
    },
  ]);
  return { userId, userCreated: !existing };
}
