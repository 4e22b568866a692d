/**
 * Whose turn it is on a decision (issue 41), for the people who rule: the stage it waits at, who
 * may still approve there, and what the person looking may do. The inbox splits "needs you" from
 * "waiting on others" with the same answer the ruling itself gives (policy.ts).
 */
import { inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import { users } from '@/db/schema';
import { currentStage, DEFAULT_POLICY, hasRuled, mayRuleAt, type Member } from './policy';
import { membersOf } from './workspace-policy';
import type { DecisionRow } from './view';

export interface Turn {
  /** The stage it waits at (index and name), with its approvals so far and its quorum; null once not pending. */
  stage: { index: number; name: string; approvals: number; required: number } | null;
  /** Who may still approve at that stage (not the one who raised it, not who has ruled), by name. */
  waiting_on: { user_id: string; name: string }[];
  /** The display names of the members the policy names by id and of those who ruled. */
  names: Record<string, string>;
  you: { may_approve: boolean; may_decline: boolean; ruled: boolean; raised: boolean };
}

/** Whether the decision waits on `viewer` now: pending, not theirs, not ruled on by them, and the stage it waits at asks them. */
export function needsYou(row: DecisionRow, viewer: Member, escalated = 0): boolean {
  if (row.status !== 'pending' || raisedBy(row) === viewer.user_id || hasRuled(row, viewer.user_id)) return false;
  const policy = row.policy ?? DEFAULT_POLICY;
  return mayRuleAt(policy, currentStage(policy, row.approvals), viewer, escalated);
}

export async function turnOf(db: Executor, row: DecisionRow, viewer: Member, escalated = 0): Promise<Turn> {
  const policy = row.policy ?? DEFAULT_POLICY;
  const index = currentStage(policy, row.approvals);
  const members = await membersOf(db, row.workspaceId);
  const pending = row.status === 'pending' && index !== -1;
  const waiting = pending
    ? members.filter((m) => m.user_id !== raisedBy(row) && !hasRuled(row, m.user_id) && mayRuleAt(policy, index, m, escalated))
    : [];
  const named = new Set([
    ...waiting.map((m) => m.user_id),
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
  const mine = raisedBy(row) === viewer.user_id;
  const ruled = hasRuled(row, viewer.user_id);
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
      may_approve: pending && !mine && !ruled && mayRuleAt(policy, index, viewer, escalated),
      may_decline: pending && !mine && !ruled && policy.stages.some((_, i) => i >= index && mayRuleAt(policy, i, viewer, escalated)),
      ruled,
      raised: mine,
    },
  };
}

function raisedBy(row: DecisionRow): string | null {
  return row.createdByType === 'human' ? row.createdById : null;
}
