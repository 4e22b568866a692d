/**
 * Whose turn it is on a decision, for the people who rule: the stage it waits at, who
 * may still approve there, and what the person looking may do. The inbox splits "needs you" from
 * "waiting on others" with the same answer the ruling itself gives (policy.ts).
 */
import { inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import { users } from '@/db/schema';
import { currentStage, DEFAULT_POLICY, hasRuled, mayRuleAt, RULING_ROLES, type Member } from './policy';
import { membersOf } from './workspace-policy';
import { delegatingTo } from '../workspaces/delegation';
import type { DecisionRow } from './view';

export interface Turn {
  /** The stage it waits at (index and name), with its approvals so far and its quorum; null once not pending. */
  stage: { index: number; name: string; approvals: number; required: number } | null;
  /** Who may still approve at that stage (not the one who raised it, not who has ruled), by name. */
  waiting_on: { user_id: string; name: string }[];
  /** The display names of the members the policy names by id and of those who ruled. */
  names: Record<string, string>;
  /** What the person looking may do, and for whom when it is as the delegate of a member away. */
  you: {
    may_approve: boolean;
    may_decline: boolean;
    acting_for: { user_id: string; name: string } | null;
    ruled: boolean;
    raised: boolean;
  };
}

/**
 * Whom `viewer` would rule for on the decision now: themselves, when the stage it waits at asks
 * them; else the first member away who asked them to take their rulings (`away`) and is asked;
 * null when it does not wait on them (not pending, theirs, or ruled on by them).
 */
function rulesFor(row: DecisionRow, viewer: Member, away: readonly Member[], decline = false): Member | null {
  if (row.status !== 'pending' || raisedBy(row) === viewer.user_id || hasRuled(row, viewer.user_id)) return null;
  // A viewer rules on nothing, not even as someone's delegate.
  if (!(RULING_ROLES as readonly string[]).includes(viewer.role)) return null;
  const policy = row.policy ?? DEFAULT_POLICY;
  const stage = currentStage(policy, row.approvals);
  if (stage === -1) return null;
  const asked = (m: Member) =>
    decline
      ? policy.stages.some((_, i) => i >= stage && mayRuleAt(policy, i, m, row.escalatedSteps))
      : mayRuleAt(policy, stage, m, row.escalatedSteps);
  if (asked(viewer)) return viewer;
  return away.find((m) => m.user_id !== raisedBy(row) && !hasRuled(row, m.user_id) && asked(m)) ?? null;
}

/** Whether the decision waits on `viewer` now (themselves, or for a member away whose rulings they hold). */
export function needsYou(row: DecisionRow, viewer: Member, away: readonly Member[] = []): boolean {
  return rulesFor(row, viewer, away) !== null;
}

export async function turnOf(db: Executor, row: DecisionRow, viewer: Member): Promise<Turn> {
  const policy = row.policy ?? DEFAULT_POLICY;
  const index = currentStage(policy, row.approvals);
  const [members, away] = await Promise.all([membersOf(db, row.workspaceId), delegatingTo(db, row.workspaceId, viewer.user_id)]);
  const pending = row.status === 'pending' && index !== -1;
  const waiting = pending
    ? members.filter((m) => m.user_id !== raisedBy(row) && !hasRuled(row, m.user_id) && mayRuleAt(policy, index, m, row.escalatedSteps))
    : [];
  const approvesFor = rulesFor(row, viewer, away);
  const declinesFor = rulesFor(row, viewer, away, true);
  const named = new Set([
    ...waiting.map((m) => m.user_id),
    ...away.map((m) => m.user_id),
    ...[...row.approvals, ...row.declines].flatMap((r) => (r.acting_for ? [r.acting_for] : [])),
    ...[...policy.stages.map((s) => s.approvers), ...policy.escalation.map((e) => e.notify)].flatMap((s) => s.user_ids),
  ]);
  const people =
    named.size > 0
      ? await db
          .select({ id: users.id, name: users.displayName })
          .from(users)
          .where(inArray(users.id, [...named]))
      : [];
  const names = Object.fromEntries(people.map((p) => [p.id, p.name]));
  const stage = policy.stages[index];
  const acting = approvesFor ?? declinesFor;
  return {
    stage:
      pending && stage
        ? {
            index,
            name: stage.name,
            approvals: row.approvals.filter((a) => a.stage === stage.name).length,
            required: stage.approvals_required,
          }
        : null,
    waiting_on: waiting.map((m) => ({ user_id: m.user_id, name: names[m.user_id] ?? m.user_id })),
    names,
    you: {
      may_approve: approvesFor !== null,
      may_decline: declinesFor !== null,
      acting_for:
        acting && acting.user_id !== viewer.user_id ? { user_id: acting.user_id, name: names[acting.user_id] ?? acting.user_id } : null,
      ruled: hasRuled(row, viewer.user_id),
      raised: raisedBy(row) === viewer.user_id,
    },
  };
}

function raisedBy(row: DecisionRow): string | null {
  return row.createdByType === 'human' ? row.createdById : null;
}
