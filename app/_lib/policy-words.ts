/**
 * A decision policy in words, as the decision page shows it: "2 approvals from Finance
 * (Ann or Bob), then 1 from Security (any owner); any decline declines; after 1 hour, tells the
 * owners". Members named by id are shown by name when the page knows it.
 */
import type { ApproverSet, DecisionPolicy } from '@/db/schema';
import { plural } from '@/server/words';
import { SINGLE_STAGE_NAME } from '@/server/domain/decisions/policy';

const ROLE_WORDS: Record<string, string> = { owner: 'owner', approver: 'approver' };

/** Who a set names: "Ann, Bob or any owner or approver". */
function approversWords(set: ApproverSet, names: Record<string, string>): string {
  const people = set.user_ids.map((id) => names[id] ?? 'a former member');
  const roles = set.roles.length > 0 ? [`any ${set.roles.map((r) => ROLE_WORDS[r] ?? r).join(' or ')}`] : [];
  const all = [...people, ...roles];
  return all.length <= 1 ? (all[0] ?? 'nobody') : `${all.slice(0, -1).join(', ')} or ${all.at(-1)}`;
}

/** 3600 → "1 hour", 90 → "90 seconds". */
function durationWords(seconds: number): string {
  for (const [unit, size] of [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return plural(seconds / size, unit);
  }
  return plural(seconds, 'second');
}

export function policyWords(policy: DecisionPolicy, names: Record<string, string>): string {
  const single = policy.stages.length === 1 && policy.stages[0]!.name === SINGLE_STAGE_NAME;
  const stages = policy.stages.map((s, i) => {
    const count = i === 0 ? plural(s.approvals_required, 'approval') : String(s.approvals_required);
    const who = approversWords(s.approvers, names);
    return single ? `${count} from ${who}` : `${count} from ${s.name} (${who})`;
  });
  const parts = [stages.join(', then ')];
  const total = policy.stages.reduce((n, s) => n + s.approvals_required, 0);
  if (total > 1 || !single) parts.push(policy.veto ? 'any decline declines' : 'declined only once the approvals can no longer be met');
  for (const step of policy.escalation) {
    parts.push(`after ${durationWords(step.after_seconds)} unruled, escalates to ${approversWords(step.notify, names)}`);
  }
  return parts.join('; ');
}
