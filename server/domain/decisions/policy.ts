/**
 * What a decision policy means: resolving what POST /decisions or a workspace rule asks
 * into the policy a decision keeps for good; who may rule at which stage; when a stage's quorum is
 * met, and when it no longer can be. Pure functions over the policy, the rulings and the members:
 * the ruling (rule.ts), the dry run (dry-run.ts) and the decision page read the same answers.
 */
import type { ApproverSet, DecisionPolicy, DecisionRuling, MembershipRole } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';

/** The roles that rule on decisions at all (a viewer never does, whatever a policy names). */
export const RULING_ROLES = ['owner', 'approver'] as const;
type RulingRole = (typeof RULING_ROLES)[number];

interface ApproverSetInput {
  roles?: RulingRole[];
  user_ids?: string[];
}

/** A policy as POST /decisions and PUT /decision-policy take it (the short form: one stage). */
export interface PolicyInput {
  approvals_required?: number;
  approvers?: ApproverSetInput;
  veto?: boolean;
  stages?: { name: string; approvals_required?: number; approvers?: ApproverSetInput }[];
  escalation?: { after_seconds: number; notify: ApproverSetInput }[];
}

/** The one stage of a policy given without stages. */
export const SINGLE_STAGE_NAME = 'approval';

const EVERY_RULER: ApproverSet = { roles: [...RULING_ROLES], user_ids: [] };

/** Any one owner or approver, and a decline ends it: the policy of a decision that asks for none. */
export const DEFAULT_POLICY: DecisionPolicy = {
  veto: true,
  stages: [{ name: SINGLE_STAGE_NAME, approvals_required: 1, approvers: EVERY_RULER }],
  escalation: [],
};

/** A member as a policy sees them. */
export interface Member {
  user_id: string;
  role: MembershipRole;
}

function approverSet(input: ApproverSetInput | undefined, fallback: ApproverSet): ApproverSet {
  if (!input) return fallback;
  return {
    // In the order roles have, each once, whatever order they came in.
    roles: RULING_ROLES.filter((r) => input.roles?.includes(r)),
    user_ids: [...new Set(input.user_ids ?? [])],
  };
}

/**
 * The full form of a policy: every stage with its quorum and approvers (a stage without them takes
 * the top-level ones, which default to one approval from any owner or approver), escalation in the
 * order it happens. Two inputs that mean the same resolve to the same policy, and so to one digest.
 */
export function resolvePolicy(input: PolicyInput): DecisionPolicy {
  const approvers = approverSet(input.approvers, EVERY_RULER);
  const required = input.approvals_required ?? 1;
  const stages = input.stages?.length
    ? input.stages.map((s) => ({
        name: s.name,
        approvals_required: s.approvals_required ?? required,
        approvers: approverSet(s.approvers, approvers),
      }))
    : [{ name: SINGLE_STAGE_NAME, approvals_required: required, approvers }];
  const escalation = [...(input.escalation ?? [])]
    .sort((a, b) => a.after_seconds - b.after_seconds)
    .map((step) => ({ after_seconds: step.after_seconds, notify: approverSet(step.notify, EVERY_RULER) }));
  return { veto: input.veto ?? true, stages, escalation };
}

/** `sha256:` + hex SHA-256 of the policy's canonical JSON (RFC 8785): what the decision and its event record. */
export function policyDigest(policy: DecisionPolicy): string {
  return digestOf(policy);
}

/** The approvals a policy asks for in all. */
export function approvalsInAll(policy: DecisionPolicy): number {
  return policy.stages.reduce((n, s) => n + s.approvals_required, 0);
}

function inSet(set: ApproverSet, member: Member): boolean {
  return set.user_ids.includes(member.user_id) || (set.roles as string[]).includes(member.role);
}

/** The index of the first stage whose quorum is not met yet; -1 once every stage's is. */
export function currentStage(policy: DecisionPolicy, approvals: readonly DecisionRuling[]): number {
  return policy.stages.findIndex((s) => approvals.filter((a) => a.stage === s.name).length < s.approvals_required);
}

/**
 * Whether `member` may rule at stage `stage`: an owner or approver the stage names (by role or id),
 * or one the escalation steps reached so far (`escalated` of them) name.
 */
export function mayRuleAt(policy: DecisionPolicy, stage: number, member: Member, escalated: number): boolean {
  if (!(RULING_ROLES as readonly string[]).includes(member.role)) return false;
  const at = policy.stages[stage];
  if (!at) return false;
  return inSet(at.approvers, member) || policy.escalation.slice(0, escalated).some((step) => inSet(step.notify, member));
}

/** Who has ruled already, themselves or through a delegate: nobody rules twice on one decision. */
export function hasRuled(rulings: { approvals: readonly DecisionRuling[]; declines: readonly DecisionRuling[] }, userId: string): boolean {
  return [...rulings.approvals, ...rulings.declines].some((r) => r.approver_id === userId || r.acting_for === userId);
}

/**
 * Whether the quorum of every stage not met yet can still be met by `candidates` (members who have
 * not ruled), each approving once, counting those every escalation step would add. A matching of
 * candidates to the approvals still missing (Kuhn's augmenting paths; a few dozen of each at most).
 */
export function canStillBeMet(policy: DecisionPolicy, approvals: readonly DecisionRuling[], candidates: readonly Member[]): boolean {
  const slots: number[] = [];
  policy.stages.forEach((s, i) => {
    const missing = s.approvals_required - approvals.filter((a) => a.stage === s.name).length;
    for (let k = 0; k < missing; k++) slots.push(i);
  });
  if (slots.length > candidates.length) return false;
  const everyStep = policy.escalation.length;
  const holder = new Array<number>(candidates.length).fill(-1);
  const augment = (slot: number, seen: boolean[]): boolean => {
    for (let c = 0; c < candidates.length; c++) {
      if (seen[c] || !mayRuleAt(policy, slots[slot]!, candidates[c]!, everyStep)) continue;
      seen[c] = true;
      if (holder[c] === -1 || augment(holder[c]!, seen)) {
        holder[c] = slot;
        return true;
      }
    }
    return false;
  };
  return slots.every((_, slot) => augment(slot, new Array<boolean>(candidates.length).fill(false)));
}

/** Where a decision's rulings stand. */
export interface Rulings {
  approvals: readonly DecisionRuling[];
  declines: readonly DecisionRuling[];
}

/**
 * Who rules, as the policy sees them (`member`: whose eligibility counts), and what their ruling
 * records. A delegate ruling for a member who is away is `approverId` acting for `member`.
 */
export interface Ruler {
  member: Member;
  /** Who gives the ruling, when it is not `member` themselves: their delegate. */
  approverId?: string;
  name: string | null;
  at: string;
}

/**
 * One ruling under a policy: refused (someone who already ruled; someone the policy does not allow
 * at the stage the decision stands at, or, for a decline, at any stage still to come), or recorded
 * towards the quorum, and whether it ends the decision. A decline under veto ends it at once and is
 * the decision's resolution, not a recorded decline; without veto, it ends the decision once the
 * quorum cannot be met by the members left (`members`, less whoever raised it and who has ruled).
 */
export type Step =
  | { refused: 'already_ruled' | 'not_allowed'; stage: number }
  | {
      refused: null;
      stage: number;
      recorded: DecisionRuling | null;
      list: 'approvals' | 'declines';
      ends: 'approved' | 'declined' | null;
      /** The member a delegate ruled for (also when nothing is recorded: a veto decline). */
      actingFor: string | undefined;
    };

export function step(
  policy: DecisionPolicy,
  rulings: Rulings,
  ruler: Ruler,
  outcome: 'approved' | 'declined',
  context: { members: readonly Member[]; raisedBy: string | null; escalated: number },
): Step {
  const stage = currentStage(policy, rulings.approvals);
  const approverId = ruler.approverId ?? ruler.member.user_id;
  // Nobody counts twice: not the member, nor their delegate, whoever of them ruled before.
  if (hasRuled(rulings, ruler.member.user_id) || hasRuled(rulings, approverId)) return { refused: 'already_ruled', stage };
  const recorded: DecisionRuling = {
    approver_id: approverId,
    name: ruler.name,
    stage: policy.stages[stage]!.name,
    at: ruler.at,
    ...(approverId !== ruler.member.user_id ? { acting_for: ruler.member.user_id } : {}),
  };
  if (outcome === 'approved') {
    if (!mayRuleAt(policy, stage, ruler.member, context.escalated)) return { refused: 'not_allowed', stage };
    const ends = currentStage(policy, [...rulings.approvals, recorded]) === -1 ? 'approved' : null;
    return { refused: null, stage, recorded, list: 'approvals', ends, actingFor: recorded.acting_for };
  }
  if (!policy.stages.some((_, i) => i >= stage && mayRuleAt(policy, i, ruler.member, context.escalated))) {
    return { refused: 'not_allowed', stage };
  }
  if (policy.veto) return { refused: null, stage, recorded: null, list: 'declines', ends: 'declined', actingFor: recorded.acting_for };
  const after = { approvals: rulings.approvals, declines: [...rulings.declines, recorded] };
  const left = context.members.filter((m) => m.user_id !== context.raisedBy && !hasRuled(after, m.user_id));
  const ends = canStillBeMet(policy, after.approvals, left) ? null : 'declined';
  return { refused: null, stage, recorded, list: 'declines', ends, actingFor: recorded.acting_for };
}

export type ReplayOutcome = 'approved' | 'declined' | 'pending';

export interface RecordedRuling {
  user_id: string;
  outcome: 'approved' | 'declined';
}

/**
 * What `rulings`, in the order given, would have come to under `policy`, with the members as they
 * are now: a ruling the policy would have refused is skipped, as it would have been; escalation is
 * taken as having reached everyone (the dry run asks whether the people who ruled could have met
 * the policy, not when).
 */
export function replay(
  policy: DecisionPolicy,
  rulings: readonly RecordedRuling[],
  members: readonly Member[],
  raisedBy: string | null,
): ReplayOutcome {
  const roleOf = new Map(members.map((m) => [m.user_id, m.role]));
  const state = { approvals: [] as DecisionRuling[], declines: [] as DecisionRuling[] };
  const context = { members, raisedBy, escalated: policy.escalation.length };
  // Approvals a later stage asks for, given before their stage came: they count once it does.
  let waiting: RecordedRuling[] = [];
  const apply = (r: RecordedRuling): Step | null => {
    const role = roleOf.get(r.user_id);
    if (!role || r.user_id === raisedBy) return null;
    return step(policy, state, { member: { user_id: r.user_id, role }, name: null, at: '' }, r.outcome, context);
  };
  for (const r of rulings) {
    const next = apply(r);
    if (!next) continue;
    if (next.refused) {
      if (next.refused === 'not_allowed' && r.outcome === 'approved') waiting.push(r);
      continue;
    }
    if (next.ends) return next.ends;
    state[next.list].push(next.recorded!);
    // A stage may have passed: try the approvals that were early, until none counts any more.
    for (let counted = true; counted;) {
      counted = false;
      for (const early of waiting) {
        const tried = apply(early);
        if (!tried || tried.refused) continue;
        if (tried.ends) return tried.ends;
        state.approvals.push(tried.recorded!);
        waiting = waiting.filter((w) => w !== early);
        counted = true;
        break;
      }
    }
  }
  return 'pending';
}
