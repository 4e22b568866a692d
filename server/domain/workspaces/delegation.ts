/**
 * Delegation while away: a member says "away until <time>, my rulings go to <member>".
 * While it holds, the delegate may rule wherever the member may, and each such ruling records
 * `acting_for`. Setting and ending it are ledger events (membership.delegation_set, .delegation_ended);
 * it lapses by itself at its time. Delegation is one hop: a delegate's own delegate does not act for
 * the members who chose the first, and a member who is away cannot be chosen.
 */
import { and, asc, eq, gt, inArray } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { memberships, users, type MembershipRole } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { RULING_ROLES } from '../decisions/policy';
import { membershipId } from './ids';

/** At most a year away: a delegation nobody remembers setting should not outlive the year. */
const MAX_AWAY_MS = 366 * 86_400_000;

export interface Away {
  until: string;
  delegate: { user_id: string; name: string };
}

/** The member's delegation, while it holds; null otherwise. */
export async function readAway(db: Executor, workspaceId: string, userId: string, now = new Date()): Promise<Away | null> {
  const [row] = await db
    .select({ until: memberships.awayUntil, delegateId: memberships.delegateId, name: users.displayName })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.delegateId))
    .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.userId, userId), gt(memberships.awayUntil, now)));
  return row?.until && row.delegateId ? { until: row.until.toISOString(), delegate: { user_id: row.delegateId, name: row.name } } : null;
}

/** The members whose rulings go to `delegateId` now, with their roles (what a policy asks of them). */
export async function delegatingTo(db: Executor, workspaceId: string, delegateId: string, now = new Date()) {
  return (
    db
      .select({ user_id: memberships.userId, role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.delegateId, delegateId), gt(memberships.awayUntil, now)))
      // One order for the page and the ruling: the member a delegate is shown to rule for is the one recorded.
      .orderBy(asc(memberships.userId))
  );
}

function invalid(path: string, message: string): never {
  throw new AppError('validation_failed', message, { issues: [{ path, message }] });
}

/** Sets (or replaces) the signed-in member's delegation. */
export async function setAway(tx: Tx, actor: Actor, input: { until: Date; delegateId: string }, now = new Date()): Promise<Away> {
  if (actor.type !== 'human') throw new AppError('human_session_required');
  if (input.until.getTime() <= now.getTime()) invalid('until', 'must be in the future');
  if (input.until.getTime() - now.getTime() > MAX_AWAY_MS) invalid('until', 'must be within a year');
  if (input.delegateId === actor.id) invalid('delegate_id', 'must be another member');
  // The ledger first, as a change of role or a removal takes it before the same rows.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const rows = await tx
    .select({ userId: memberships.userId, role: memberships.role, awayUntil: memberships.awayUntil })
    .from(memberships)
    .where(and(eq(memberships.workspaceId, actor.workspaceId), inArray(memberships.userId, [actor.id, input.delegateId])));
  const me = rows.find((r) => r.userId === actor.id);
  const delegate = rows.find((r) => r.userId === input.delegateId);
  if (!me) throw new AppError('not_found', 'You are not a member of this workspace.');
  if (!delegate || !(RULING_ROLES as readonly MembershipRole[]).includes(delegate.role)) {
    invalid('delegate_id', 'must be an owner or approver of this workspace');
  }
  if (delegate.awayUntil && delegate.awayUntil > now) invalid('delegate_id', 'is away themselves: a delegate cannot delegate further');
  await tx
    .update(memberships)
    .set({ awayUntil: input.until, delegateId: input.delegateId })
    .where(and(eq(memberships.workspaceId, actor.workspaceId), eq(memberships.userId, actor.id)));
  await appendEvents(tx, actor, [
    {
      aggregateType: 'membership',
      aggregateId: membershipId(actor.workspaceId, actor.id),
      eventType: 'membership.delegation_set',
      payload: { user_id: actor.id, delegate_id: input.delegateId, until: input.until.toISOString() },
    },
  ]);
  return (await readAway(tx, actor.workspaceId, actor.id, now))!;
}

/** Ends the signed-in member's delegation now (nothing to end: nothing written). */
export async function endAway(tx: Tx, actor: Actor, now = new Date()): Promise<void> {
  if (actor.type !== 'human') throw new AppError('human_session_required');
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const current = await readAway(tx, actor.workspaceId, actor.id, now);
  await tx
    .update(memberships)
    .set({ awayUntil: null, delegateId: null })
    .where(and(eq(memberships.workspaceId, actor.workspaceId), eq(memberships.userId, actor.id)));
  if (!current) return;
  await appendEvents(tx, actor, [
    {
      aggregateType: 'membership',
      aggregateId: membershipId(actor.workspaceId, actor.id),
      eventType: 'membership.delegation_ended',
      payload: { user_id: actor.id, delegate_id: current.delegate.user_id, until: current.until },
    },
  ]);
}
