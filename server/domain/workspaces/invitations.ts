/**
 * Invitations: an owner invites an email address with a role; the link (shown once, emailed when
 * SMTP is set up) lets its holder join within 7 days, once. Only the token's SHA-256 is stored;
 * ledger events (invitation.created, invitation.accepted, invitation.revoked) name the address and
 * the role, never the token.
 *
 * Inviting an address that already has a pending invitation replaces it (the old link stops
 * working): the owner who lost a link just invites again.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { and, desc, eq, gt, isNull } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import { invitations, memberships, users, workspaces, type MembershipRole } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import { AppError, hasSqlState } from '@/server/errors';
import type { Actor, Trace } from '../actor';
import { addMember, normalEmail } from './members';

const INVITATION_TTL_DAYS = 7;
const TOKEN_PREFIX = 'awi_';
const TOKEN_PATTERN = /^awi_[A-Za-z0-9_-]{43}$/;

export const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** A link token: 256 random bits, recognisable by its prefix (as API keys are by `awk_`). */
export function generateToken(prefix = TOKEN_PREFIX): { token: string; hash: string } {
  const token = prefix + randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

type InvitationState = 'pending' | 'accepted' | 'revoked' | 'expired';

export interface Invitation {
  id: string;
  email: string;
  role: MembershipRole;
  state: InvitationState;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
}

type InvitationRow = typeof invitations.$inferSelect;

function stateOf(row: InvitationRow, now: Date): InvitationState {
  if (row.acceptedAt) return 'accepted';
  if (row.revokedAt) return 'revoked';
  return row.expiresAt <= now ? 'expired' : 'pending';
}

function view(row: InvitationRow, invitedBy: string | null, now: Date): Invitation {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    state: stateOf(row, now),
    invited_by: invitedBy,
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
  };
}

/** Pending invitations of a workspace, newest first. */
export async function listPendingInvitations(tx: Tx, workspaceId: string, now = new Date()): Promise<Invitation[]> {
  const rows = await tx
    .select({ row: invitations, invitedBy: users.displayName })
    .from(invitations)
    .leftJoin(users, eq(users.id, invitations.invitedBy))
    .where(
      and(
        eq(invitations.workspaceId, workspaceId),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
        gt(invitations.expiresAt, now),
      ),
    )
    .orderBy(desc(invitations.createdAt));
  return rows.map((r) => view(r.row, r.invitedBy, now));
}

export interface CreatedInvitation {
  invitation: Invitation;
  /** The link's token. Shown once; only its hash is kept. */
  token: string;
}

async function revokeRows(tx: Tx, actor: Actor, rows: { id: string; email: string }[], reason: string): Promise<void> {
  if (rows.length === 0) return;
  await appendEvents(
    tx,
    actor,
    rows.map((r) => ({
      aggregateType: 'invitation',
      aggregateId: r.id,
      eventType: 'invitation.revoked',
      payload: { id: r.id, email: r.email, reason },
    })),
  );
}

export async function createInvitation(
  tx: Tx,
  actor: Actor,
  input: { email: string; role: MembershipRole },
  now = new Date(),
): Promise<CreatedInvitation> {
  const email = normalEmail(input.email);
  const [member] = await tx
    .select({ userId: memberships.userId })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.workspaceId, actor.workspaceId), eq(users.email, email)));
  if (member) throw new AppError('conflict', `${email} is already a member of this workspace.`);

  const replaced = await tx
    .update(invitations)
    .set({ revokedAt: now })
    .where(
      and(
        eq(invitations.workspaceId, actor.workspaceId),
        eq(invitations.email, email),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
        gt(invitations.expiresAt, now),
      ),
    )
    .returning({ id: invitations.id, email: invitations.email });
  await revokeRows(tx, actor, replaced, 'replaced');

  const { token, hash } = generateToken();
  const id = randomUUID();
  const expiresAt = new Date(now.getTime() + INVITATION_TTL_DAYS * 24 * 60 * 60 * 1000);
  const [row] = await tx
    .insert(invitations)
    .values({
      id,
      workspaceId: actor.workspaceId,
      email,
      role: input.role,
      tokenHash: hash,
      invitedBy: actor.type === 'human' ? actor.id : null,
      createdAt: now,
      expiresAt,
    })
    .returning();
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'invitation',
        aggregateId: id,
        eventType: 'invitation.created',
        payload: { id, email, role: input.role, expires_at: expiresAt.toISOString() },
      },
    ],
    now,
  );
  const [inviter] = actor.type === 'human' ? await tx.select({ name: users.displayName }).from(users).where(eq(users.id, actor.id)) : [];
  return { invitation: view(row!, inviter?.name ?? null, now), token };
}

/** Revokes a pending invitation. Revoking one that is no longer pending changes nothing. */
export async function revokeInvitation(
  tx: Tx,
  actor: Actor,
  input: { invitationId: string },
  now = new Date(),
): Promise<{ revoked: boolean }> {
  const [row] = await tx
    .select()
    .from(invitations)
    .where(and(eq(invitations.id, input.invitationId), eq(invitations.workspaceId, actor.workspaceId)));
  if (!row) throw new AppError('not_found', 'No such invitation in this workspace.');
  if (stateOf(row, now) !== 'pending') return { revoked: false };
  const updated = await tx
    .update(invitations)
    .set({ revokedAt: now })
    .where(and(eq(invitations.id, row.id), isNull(invitations.acceptedAt), isNull(invitations.revokedAt)))
    .returning({ id: invitations.id, email: invitations.email });
  await revokeRows(tx, actor, updated, 'revoked');
  return { revoked: updated.length > 0 };
}

/** What the holder of a link sees before accepting. */
export interface InvitationPreview {
  id: string;
  workspace: { id: string; name: string };
  email: string;
  role: MembershipRole;
  invited_by: string | null;
  expires_at: string;
  /** The email already has an account: its owner signs in to accept. */
  account_exists: boolean;
}

/** The pending invitation a token stands for, or null (unknown, used, revoked or expired alike). */
export async function findPendingInvitation(db: Database | Tx, token: string, now = new Date()): Promise<InvitationPreview | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const [found] = await db
    .select({ row: invitations, workspaceName: workspaces.name, invitedBy: users.displayName })
    .from(invitations)
    .innerJoin(workspaces, eq(workspaces.id, invitations.workspaceId))
    .leftJoin(users, eq(users.id, invitations.invitedBy))
    .where(eq(invitations.tokenHash, hashToken(token)));
  if (!found || stateOf(found.row, now) !== 'pending') return null;
  const [account] = await db.select({ id: users.id }).from(users).where(eq(users.email, found.row.email));
  return {
    id: found.row.id,
    workspace: { id: found.row.workspaceId, name: found.workspaceName },
    email: found.row.email,
    role: found.row.role,
    invited_by: found.invitedBy,
    expires_at: found.row.expiresAt.toISOString(),
    account_exists: Boolean(account),
  };
}

export type Acceptor =
  /** A signed-in user; their email must be the invitation's. */
  | { kind: 'user'; userId: string }
  /** Someone new: the account is created with the invitation's email. */
  | { kind: 'new'; displayName: string; passwordHash: string };

export const INVALID_LINK = 'This invitation link is not valid: it may have expired, been used, or been revoked. Ask for a new one.';

/**
 * Accepts the invitation `token` stands for: marks it used (in the statement that finds it, so a
 * link is used once even when two people race with it) and adds the member.
 */
export async function acceptInvitation(
  tx: Tx,
  trace: Trace,
  token: string,
  who: Acceptor,
  now = new Date(),
): Promise<{ workspaceId: string; userId: string; role: MembershipRole; email: string }> {
  if (!TOKEN_PATTERN.test(token)) throw new AppError('not_found', INVALID_LINK);
  const [claimed] = await tx
    .update(invitations)
    .set({ acceptedAt: now })
    .where(
      and(
        eq(invitations.tokenHash, hashToken(token)),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
        gt(invitations.expiresAt, now),
      ),
    )
    .returning();
  if (!claimed) throw new AppError('not_found', INVALID_LINK);
  const [account] = await tx.select({ id: users.id }).from(users).where(eq(users.email, claimed.email));
  let userId: string;
  if (who.kind === 'user') {
    if (!account || account.id !== who.userId) {
      throw new AppError('forbidden', `This invitation is for ${claimed.email}. Sign in with that address to accept it.`);
    }
    userId = who.userId;
  } else {
    if (account) throw new AppError('conflict', `${claimed.email} already has an account: sign in to accept the invitation.`);
    userId = randomUUID();
  }
  // The new member acts: they accepted, and the membership (with the account, for someone new) is theirs.
  const actor: Actor = { type: 'human', id: userId, ownerId: userId, workspaceId: claimed.workspaceId, role: claimed.role, trace };
  try {
    await addMember(tx, actor, {
      email: claimed.email,
      displayName: who.kind === 'new' ? who.displayName : '',
      passwordHash: who.kind === 'new' ? who.passwordHash : undefined,
      newUserId: userId,
      role: claimed.role,
    });
  } catch (err) {
    // Two invitations for one email accepted at the same moment: the account the other made won.
    if (who.kind === 'new' && hasSqlState(err, '23505')) {
      throw new AppError('conflict', `${claimed.email} already has an account: sign in to accept the invitation.`);
    }
    throw err;
  }
  await tx.update(invitations).set({ acceptedBy: userId }).where(eq(invitations.id, claimed.id));
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'invitation',
        aggregateId: claimed.id,
        eventType: 'invitation.accepted',
        payload: { id: claimed.id, email: claimed.email, role: claimed.role, user_id: userId },
      },
    ],
    now,
  );
  return { workspaceId: claimed.workspaceId, userId, role: claimed.role, email: claimed.email };
}
