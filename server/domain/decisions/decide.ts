/**
 * What a ruling, an escalation step or a timeout does to a decision, as pure functions over plain
 * data: the decision as read, what happened (who ruled how, with which passkey proof, for whom;
 * or the time), and its frozen policy in; the row's changes, the ledger events to append and the
 * grant to issue out. No database here: the shells (rule.ts, escalation.ts, timeouts.ts) read
 * what these need once, under the workspace's ledger lock, and write what they answer in one
 * update and one append. The table of cases in decide.test.ts runs them without a database.
 */
import type { DecisionAction, DecisionPolicy, DecisionResolution, DecisionRuling, MembershipRole } from '@/db/schema';
import type { NewEvent, PayloadOf } from '@/server/ledger/event-types';
import { AppError } from '@/server/errors';
import type { PasskeyProof } from '../passkeys/ruling';
import { RULING_ROLES, step, type Member, type Step } from './policy';
import { raisedBy, type DecisionState, type Reading, type RulingIntent } from './read-ruling';
import type { DecisionRow } from './view';

/** A ruling, with what the shell read for it. */
export interface Ruling {
  by: { user_id: string; role: MembershipRole; name: string | null };
  outcome: RulingIntent['outcome'];
  note?: string;
  reading: Reading;
  /** The checked passkey assertion, and the `passkey.registered` events the ledger still lacks. */
  passkey: { proof: PasskeyProof; events: NewEvent[] } | null;
  /** The members whose rulings go to `by` now (one hop: whom they hold for is not passed on). */
  away: readonly Member[];
  /** The workspace's members: only a decline without veto asks who is left to approve. */
  members: readonly Member[];
  /** The version of the action's target task before this ruling's changes; null without a target. */
  targetVersion: number | null;
  at: Date;
}

/** What changes in the decision's row; `versions`: one per event of the decision. */
export interface DecisionChanges {
  status?: 'approved' | 'declined' | 'cancelled' | 'expired';
  resolution?: DecisionResolution;
  approvals?: DecisionRuling[];
  declines?: DecisionRuling[];
  approvedAction?: DecisionAction;
  approvedActionDigest?: string;
  escalatedSteps?: number;
  nextEscalationAt?: Date | null;
  updatedAt: Date;
  versions: number;
}

/**
 * The grant an approval of an action issues: for its target at `version`, the version the target
 * was at before the approval when nothing else had moved it since the decision was raised
 * (`untouched`: the approval's own changes still move it on, grantTargetVersion), else the version
 * the decision was raised for, which the task has left, so its first use is refused as stale.
 */
export interface GrantToIssue {
  passkey: boolean;
  target: { id: string; version: number; untouched: boolean } | null;
}

export interface Decided {
  changes: DecisionChanges;
  events: NewEvent[];
  /** The outcome the ruling ends the decision with; null when it is only recorded towards the quorum. */
  resolved: 'approved' | 'declined' | 'cancelled' | null;
  grant: GrantToIssue | null;
}

/**
 * What decide() needs read for a ruling by `by`, so that the shell reads only that: the members
 * away who left their rulings to `by`, when the policy does not ask `by` themselves; every member,
 * for a decline without veto (it ends the decision once the quorum is out of reach).
 */
export function factsNeeded(decision: DecisionState, by: Member, outcome: RulingIntent['outcome'], policy: DecisionPolicy) {
  if (outcome === 'cancelled') return { away: false, members: false };
  const context = { members: [], raisedBy: null, escalated: decision.escalatedSteps };
  const self = step(policy, decision, { member: by, name: null, at: '' }, outcome, context);
  return { away: self.refused === 'not_allowed', members: outcome === 'declined' && !policy.veto };
}

/**
 * A ruling under the decision's policy: what it changes, the events that record it (a passkey the
 * ledger has not seen first, then the ruling counted towards the quorum, then the resolution), and
 * the grant to issue. 409 already_ruled for a second ruling by a member or their delegate; 403
 * forbidden, naming the stage, for someone the policy does not ask.
 */
export function decide(decision: DecisionState, ruling: Ruling, policy: DecisionPolicy): Decided {
  const { reading, passkey, at } = ruling;
  const counted = ruling.outcome === 'cancelled' ? null : count(decision, ruling, policy, ruling.outcome);
  const after = counted?.recorded ? [...decision[counted.list], counted.recorded] : null;
  const recorded = (proof?: PasskeyProof): NewEvent[] => (counted?.recorded ? [recordedEvent(decision.id, counted, after!, proof)] : []);
  if (counted && !counted.ends) {
    return {
      changes: { [counted.list]: after!, updatedAt: at, versions: 1 },
      events: [...(passkey?.events ?? []), ...recorded(passkey?.proof)],
      resolved: null,
      grant: null,
    };
  }
  const resolution: DecisionResolution = {
    outcome: ruling.outcome,
    option_ids: reading.optionIds,
    note: ruling.note ?? null,
    resolved_by: ruling.by.user_id,
    resolved_by_type: 'human',
    resolved_by_name: ruling.by.name,
    resolved_at: at.toISOString(),
    ...(counted?.actingFor ? { acting_for: counted.actingFor } : {}),
  };
  const approved = reading.approved;
  const target = approved?.action.target;
  const untouched = target !== undefined && ruling.targetVersion === decision.targetVersion;
  return {
    changes: {
      status: ruling.outcome,
      resolution,
      ...(counted && after ? { [counted.list]: after } : {}),
      ...(approved ? { approvedAction: approved.action, approvedActionDigest: approved.digest } : {}),
      updatedAt: at,
      // The recorded ruling, when there is one, and the resolution.
      versions: after ? 2 : 1,
    },
    events: [
      // A passkey the workspace's ledger has not seen yet is announced before the ruling it signs.
      ...(passkey?.events ?? []),
      // The ruling that completes the quorum (or, without veto, leaves it out of reach) is recorded too.
      ...recorded(),
      {
        aggregateType: 'decision',
        aggregateId: decision.id,
        eventType: `decision.${ruling.outcome}`,
        payload: {
          decision_id: decision.id,
          status: ruling.outcome,
          resolution,
          ...(approved ? { approved_action: approved.action, approved_action_digest: approved.digest } : {}),
          ...(passkey ? { passkey: passkey.proof } : {}),
        },
      },
    ],
    resolved: ruling.outcome,
    grant: approved
      ? {
          passkey: passkey !== null,
          target: target ? { id: target.id, version: untouched ? ruling.targetVersion! : decision.targetVersion!, untouched } : null,
        }
      : null,
  };
}

/**
 * The version a grant names, once the events the approval appends with it are known: an untouched
 * target moves on with each of them that is its own (one version per event of the task).
 */
export function grantTargetVersion(grant: GrantToIssue, events: readonly NewEvent[]): number | null {
  const target = grant.target;
  if (!target) return null;
  if (!target.untouched) return target.version;
  return target.version + events.filter((e) => e.aggregateType === 'task' && e.aggregateId === target.id).length;
}

type Counted = Extract<Step, { refused: null }>;

/** The ruling under the policy (policy.ts step), as the member themselves or as the delegate of one away. */
function count(decision: DecisionState, ruling: Ruling, policy: DecisionPolicy, outcome: 'approved' | 'declined'): Counted {
  const raised = raisedBy(decision);
  const context = { members: ruling.members, raisedBy: raised, escalated: decision.escalatedSteps };
  const { name } = ruling.by;
  const at = ruling.at.toISOString();
  let next = step(policy, decision, { member: { user_id: ruling.by.user_id, role: ruling.by.role }, name, at }, outcome, context);
  if (next.refused === 'not_allowed') {
    // Not asked themselves: perhaps as the delegate of a member who is away and is asked.
    for (const away of ruling.away) {
      if (away.user_id === raised) continue;
      const acting = step(policy, decision, { member: away, approverId: ruling.by.user_id, name, at }, outcome, context);
      if (acting.refused === null) {
        next = acting;
        break;
      }
    }
  }
  if (next.refused === 'already_ruled') {
    throw new AppError('already_ruled', 'You have already ruled on this decision; its policy counts each member once.');
  }
  if (next.refused !== null) {
    const stage = policy.stages[next.stage]!;
    throw new AppError(
      'forbidden',
      policy.stages.length > 1
        ? `The decision waits for its “${stage.name}” stage, and its policy does not ask you to rule on it there.`
        : 'The decision’s policy does not ask you to rule on it.',
      { stage: stage.name },
    );
  }
  return next;
}

/** The event of a ruling recorded towards the quorum; a passkey proof rides on it when it did not end the decision. */
function recordedEvent(
  decisionId: string,
  counted: Counted,
  after: DecisionRuling[],
  proof?: PayloadOf<'decision.approval_recorded'>['passkey'],
): NewEvent {
  const ruling = counted.recorded!;
  return counted.list === 'approvals'
    ? {
        aggregateType: 'decision',
        aggregateId: decisionId,
        eventType: 'decision.approval_recorded',
        payload: { decision_id: decisionId, approval: ruling, approvals: after, ...(proof ? { passkey: proof } : {}) },
      }
    : {
        aggregateType: 'decision',
        aggregateId: decisionId,
        eventType: 'decision.decline_recorded',
        payload: { decision_id: decisionId, decline: ruling, declines: after },
      };
}

/** When step `index` of `policy` comes due for a decision raised at `createdAt`; null past the last step. */
export function escalationDue(policy: DecisionPolicy, createdAt: Date, index: number): Date | null {
  const next = policy.escalation[index];
  return next ? new Date(createdAt.getTime() + next.after_seconds * 1000) : null;
}

type EscalationState = Pick<DecisionRow, 'id' | 'status' | 'policy' | 'createdAt' | 'dueAt' | 'nextEscalationAt' | 'escalatedSteps'>;

/**
 * The escalation steps of a decision due by `now`: nothing when it is not pending, has no steps
 * left or none due yet; `time_out` when it is overdue (it times out first, and is not escalated);
 * else every step due, each a `decision.escalated` event naming the members (`members`: the
 * workspace's, with their roles) its set names now, and who is to be told.
 */
export function escalate(
  decision: EscalationState,
  members: readonly Member[],
  now: Date,
): { kind: 'none' } | { kind: 'time_out' } | { kind: 'escalated'; changes: DecisionChanges; events: NewEvent[]; notified: string[] } {
  const policy = decision.policy;
  if (decision.status !== 'pending' || !policy || !decision.nextEscalationAt || decision.nextEscalationAt > now) return { kind: 'none' };
  if (decision.dueAt && decision.dueAt <= now) return { kind: 'time_out' };
  const rulers = members.filter((m) => (RULING_ROLES as readonly string[]).includes(m.role));
  const events: NewEvent[] = [];
  const notified = new Set<string>();
  let reached = decision.escalatedSteps;
  for (
    let due = escalationDue(policy, decision.createdAt, reached);
    due && due <= now;
    due = escalationDue(policy, decision.createdAt, reached)
  ) {
    const { after_seconds, notify } = policy.escalation[reached]!;
    const people = rulers
      .filter((m) => notify.user_ids.includes(m.user_id) || (notify.roles as string[]).includes(m.role))
      .map((m) => m.user_id);
    people.forEach((p) => notified.add(p));
    reached += 1;
    events.push({
      aggregateType: 'decision',
      aggregateId: decision.id,
      eventType: 'decision.escalated',
      payload: {
        decision_id: decision.id,
        step: reached - 1,
        after_seconds,
        notify,
        notified: people,
        escalated_steps: reached,
        next_escalation_at: escalationDue(policy, decision.createdAt, reached)?.toISOString() ?? null,
      },
    });
  }
  const changes = {
    escalatedSteps: reached,
    nextEscalationAt: escalationDue(policy, decision.createdAt, reached),
    updatedAt: now,
    versions: events.length,
  };
  return { kind: 'escalated', changes, events, notified: [...notified] };
}

export type TimeoutState = Pick<DecisionRow, 'id' | 'status' | 'dueAt' | 'onTimeout'>;

/**
 * A pending decision past its due_at (docs/contract.md §7.1): `expired`, or `declined` by the
 * system when its on_timeout is `decline`, with its event. Null when it is not pending or not due.
 */
export function timeOut(decision: TimeoutState, now: Date): { changes: DecisionChanges; events: NewEvent[] } | null {
  if (decision.status !== 'pending' || !decision.dueAt || decision.dueAt > now) return null;
  const outcome = decision.onTimeout === 'decline' ? 'declined' : 'expired';
  const resolution: DecisionResolution = {
    outcome,
    option_ids: [],
    note: outcome === 'declined' ? 'Declined automatically: due_at passed without a ruling.' : 'Expired: due_at passed without a ruling.',
    resolved_by: 'system',
    resolved_by_type: 'system',
    resolved_by_name: null,
    resolved_at: now.toISOString(),
  };
  return {
    changes: { status: outcome, resolution, updatedAt: now, versions: 1 },
    events: [
      {
        aggregateType: 'decision',
        aggregateId: decision.id,
        eventType: outcome === 'declined' ? 'decision.declined' : 'decision.expired',
        payload: { decision_id: decision.id, status: outcome, resolution },
      },
    ],
  };
}
