/**
 * The human ruling on a decision: approve (optionally choosing options) or decline, by a signed-in
 * owner or approver of its workspace who did not raise it; or cancel, by an owner (who may withdraw
 * a decision they raised). Each is a conditional update that only moves a decision out of
 * `pending`, so of two racing rulings exactly one wins.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisions, users, type DecisionAction, type DecisionResolution, type DecisionRuling } from '@/db/schema';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { continueAfterApproval } from './continuation';
import { releaseHold } from './hold';
import { isDefaultOptions } from './options';
import { DEFAULT_POLICY, step } from './policy';
import { membersOf } from './workspace-policy';
import { delegatingTo } from '../workspaces/delegation';
import { findDecision, type DecisionRow } from './view';
import { actionDigest, taskVersion } from '../grants/action';
import { issueGrant } from '../grants/issue';
import { verifyRuling, type PasskeyAnswer, type Ruled } from '../passkeys/ruling';
import { relyingParty, type RelyingParty } from '../passkeys/relying-party';

export interface RulingInput {
  outcome: 'approved' | 'declined' | 'cancelled';
  option_ids?: string[];
  note?: string;
  /** Approving an editable decision's action: the arguments as the approver changed them. */
  arguments?: Record<string, unknown>;
  /** The approver's passkey assertion over the ruling's statement (server/domain/passkeys/ruling.ts). */
  passkey?: PasskeyAnswer;
}

/**
 * `signing` signs the grant an approval of a decision with an action issues (its key is made now
 * when the workspace has none yet).
 */
export async function ruleOnDecision(
  tx: Tx,
  actor: Actor,
  decisionId: string,
  input: RulingInput,
  signing: SigningSettings,
): Promise<DecisionRow> {
  if (actor.type !== 'human') throw new AppError('human_session_required');
  // The lock order of every change to existing decisions and runs: the ledger first (an approval may go on to change a run).
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const decision = await findDecision(tx, actor.workspaceId, decisionId);
  if (!decision) throw new AppError('not_found', 'No such decision in your workspace.');
  if (decision.status !== 'pending') {
    throw new AppError('decision_not_pending', `The decision is already ${decision.status}.`, { status: decision.status });
  }
  if (input.outcome !== 'cancelled' && decision.createdByType === 'human' && decision.createdById === actor.id) {
    throw new AppError('forbidden', 'You raised this decision; another owner or approver must rule on it.');
  }
  const optionIds = chosenOptions(decision, input);
  const approved = approvedAction(decision, input);
  const signed = await passkeyProof(tx, actor, decision, input, optionIds, approved, relyingParty(signing.appUrl));
  // Whether anything but this decision moved its target on since it was raised (read before the
  // approval's own changes, which may move it on again: a resumed run, which the task follows).
  const targetUntouched = approved?.target
    ? (await taskVersion(tx, actor.workspaceId, approved.target.id)) === decision.targetVersion
    : false;

  const [user] = await tx.select({ name: users.displayName }).from(users).where(eq(users.id, actor.id));
  const now = new Date();
  const name = user?.name ?? null;
  // Under the decision's policy, an approval or decline may only be recorded towards its quorum.
  const counted = input.outcome === 'cancelled' ? null : await countRuling(tx, actor, decision, input.outcome, name, now);
  if (counted && !counted.ends) {
    const [recorded] = await tx
      .update(decisions)
      .set({ [counted.list]: counted.after, updatedAt: now, version: sql`${decisions.version} + 1` })
      .where(and(eq(decisions.id, decisionId), eq(decisions.workspaceId, actor.workspaceId), eq(decisions.status, 'pending')))
      .returning();
    await appendEvents(tx, actor, [...(signed?.events ?? []), recordedEvent(decisionId, counted, signed?.proof)], now);
    return recorded!;
  }
  const resolution: DecisionResolution = {
    outcome: input.outcome,
    option_ids: optionIds,
    note: input.note ?? null,
    resolved_by: actor.id,
    resolved_by_type: 'human',
    resolved_by_name: name,
    resolved_at: now.toISOString(),
    ...(counted?.actingFor ? { acting_for: counted.actingFor } : {}),
  };
  const [updated] = await tx
    .update(decisions)
    .set({
      status: input.outcome,
      resolution,
      updatedAt: now,
      // One version per event of the decision: the recorded ruling, when there is one, and the resolution.
      version: sql`${decisions.version} + ${counted?.recorded ? 2 : 1}`,
      ...(counted?.recorded ? { [counted.list]: counted.after } : {}),
      ...(approved ? { approvedAction: approved, approvedActionDigest: actionDigest(approved) } : {}),
    })
    .where(and(eq(decisions.id, decisionId), eq(decisions.workspaceId, actor.workspaceId), eq(decisions.status, 'pending')))
    .returning();
  if (!updated) {
    // Another ruling (or the timeout sweep) committed first.
    const current = await findDecision(tx, actor.workspaceId, decisionId);
    throw new AppError('decision_not_pending', `The decision is already ${current?.status ?? 'resolved'}.`, { status: current?.status });
  }
  await appendEvents(
    tx,
    actor,
    [
      // A passkey the workspace's ledger has not seen yet is announced before the ruling it signs.
      ...(signed?.events ?? []),
      // The ruling that completes the quorum (or, without veto, leaves it out of reach) is recorded too.
      ...(counted?.recorded ? [recordedEvent(decisionId, counted)] : []),
      {
        aggregateType: 'decision',
        aggregateId: decisionId,
        eventType: `decision.${input.outcome}`,
        payload: {
          decision_id: decisionId,
          status: input.outcome,
          resolution,
          ...(approved ? { approved_action: approved, approved_action_digest: updated.approvedActionDigest! } : {}),
          ...(signed ? { passkey: signed.proof } : {}),
        },
      },
    ],
    now,
  );
  const continued = input.outcome === 'approved' ? await continueAfterApproval(tx, actor, updated) : { action: 'none' as const };
  if (continued.action === 'none') await appendEvents(tx, actor, await releaseHold(tx, actor.workspaceId, decisionId, now), now);
  if (approved) {
    // The grant holds for the target as the approval left it, unless something else had moved it
    // on before: then it holds for the version the decision was raised for, which the task has
    // left, and its first use is refused as stale.
    const targetVersion = approved.target
      ? targetUntouched
        ? await taskVersion(tx, actor.workspaceId, approved.target.id)
        : decision.targetVersion
      : null;
    await appendEvents(tx, actor, [await issueGrant(tx, actor, updated, targetVersion, signing, now, signed !== null)], now);
  }
  return updated;
}

interface Counted {
  recorded: DecisionRuling | null;
  /** The member a delegate ruled for. */
  actingFor: string | undefined;
  list: 'approvals' | 'declines';
  /** The list with the ruling. */
  after: DecisionRuling[];
  ends: 'approved' | 'declined' | null;
}

/**
 * The ruling under the decision's policy (server/domain/decisions/policy.ts step): 409
 * already_ruled for a second ruling, 403 for someone the policy does not ask, else what it records
 * and whether it ends the decision.
 */
async function countRuling(
  tx: Tx,
  actor: Actor,
  decision: DecisionRow,
  outcome: 'approved' | 'declined',
  name: string | null,
  now: Date,
): Promise<Counted> {
  const policy = decision.policy ?? DEFAULT_POLICY;
  // Only a decline without veto asks who is left to approve.
  const members = outcome === 'declined' && !policy.veto ? await membersOf(tx, actor.workspaceId) : [];
  const raisedBy = decision.createdByType === 'human' ? decision.createdById : null;
  const member = { user_id: actor.id, role: actor.role ?? 'viewer' };
  const context = { members, raisedBy, escalated: decision.escalatedSteps };
  const at = now.toISOString();
  let next = step(policy, decision, { member, name, at }, outcome, context);
  if (next.refused === 'not_allowed') {
    // Not asked themselves: perhaps as the delegate of a member who is away and is asked.
    for (const away of await delegatingTo(tx, actor.workspaceId, actor.id, now)) {
      if (away.user_id === raisedBy) continue;
      const acting = step(policy, decision, { member: away, approverId: actor.id, name, at }, outcome, context);
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
  const after = next.recorded ? [...decision[next.list], next.recorded] : decision[next.list];
  return { recorded: next.recorded, actingFor: next.actingFor, list: next.list, after, ends: next.ends };
}

/** The event of a ruling recorded towards the quorum; a passkey proof rides on it when it did not end the decision. */
function recordedEvent(decisionId: string, counted: Counted, proof?: PayloadOf<'decision.approval_recorded'>['passkey']): NewEvent {
  const ruling = counted.recorded!;
  return counted.list === 'approvals'
    ? {
        aggregateType: 'decision',
        aggregateId: decisionId,
        eventType: 'decision.approval_recorded',
        payload: { decision_id: decisionId, approval: ruling, approvals: counted.after, ...(proof ? { passkey: proof } : {}) },
      }
    : {
        aggregateType: 'decision',
        aggregateId: decisionId,
        eventType: 'decision.decline_recorded',
        payload: { decision_id: decisionId, decline: ruling, declines: counted.after },
      };
}

/**
 * What an approval of `decision` by `approverId` with these choices says, as a passkey signs it
 * (the statement without its nonce and time). Throws what the approval itself would refuse.
 */
export function ruledBy(decision: DecisionRow, approverId: string, input: Pick<RulingInput, 'option_ids' | 'arguments'>): Ruled {
  const ruling: RulingInput = { outcome: 'approved', ...input };
  const optionIds = chosenOptions(decision, ruling);
  const approved = approvedAction(decision, ruling);
  return statementOf(decision, approverId, optionIds, approved);
}

function statementOf(decision: DecisionRow, approverId: string, optionIds: string[], approved: DecisionAction | null): Ruled {
  return {
    decision_id: decision.id,
    outcome: 'approved',
    option_id: optionIds.length === 1 ? optionIds[0]! : null,
    option_ids: optionIds,
    action_digest: approved ? actionDigest(approved) : null,
    approver_id: approverId,
  };
}

/**
 * The approver's passkey over this approval, checked, when the decision needs one (or one was
 * given); null for other rulings. A decision that needs one is not approved without it.
 */
async function passkeyProof(
  tx: Tx,
  actor: Actor,
  decision: DecisionRow,
  input: RulingInput,
  optionIds: string[],
  approved: DecisionAction | null,
  rp: RelyingParty,
) {
  if (input.outcome !== 'approved') {
    if (input.passkey) {
      const message = 'Only an approval is signed with a passkey';
      throw new AppError('validation_failed', message, { issues: [{ path: 'passkey', message }] });
    }
    return null;
  }
  if (!input.passkey) {
    if (!decision.requirePasskey) return null;
    throw new AppError('passkey_required', 'This decision is approved only with your passkey: approve it on its page.');
  }
  return verifyRuling(tx, actor, statementOf(decision, actor.id, optionIds, approved), input.passkey, rp);
}

/**
 * The action an approval approves: the decision's, with the approver's arguments when it is
 * editable and they changed them. Null for a decision without an action, and for other rulings.
 */
function approvedAction(decision: DecisionRow, input: RulingInput): DecisionAction | null {
  if (input.arguments !== undefined && !(input.outcome === 'approved' && decision.action && decision.editable)) {
    const message = !decision.action
      ? 'The decision has no action to change'
      : !decision.editable
        ? 'The decision’s action is not editable'
        : 'Only an approval changes the action';
    throw new AppError('validation_failed', message, { issues: [{ path: 'arguments', message }] });
  }
  if (input.outcome !== 'approved' || !decision.action) return null;
  return input.arguments === undefined ? decision.action : { ...decision.action, arguments: input.arguments };
}

/**
 * Which options a ruling chooses. Declining chooses none. Approving an option_select decision
 * chooses exactly one (the default approve/decline pair implies `approve`), an option_multiselect
 * at least one; other shapes may name options they have.
 */
function chosenOptions(decision: DecisionRow, input: RulingInput): string[] {
  const given = [...new Set(input.option_ids ?? [])];
  const known = new Set(decision.options.map((o) => o.id));
  const fail = (message: string) => {
    throw new AppError('validation_failed', message, { issues: [{ path: 'option_ids', message }] });
  };
  for (const id of given) if (!known.has(id)) fail(`Option ${id} is not one of the decision’s options`);
  if (input.outcome !== 'approved') {
    if (given.length > 0) fail(`${input.outcome === 'declined' ? 'Declining' : 'Cancelling'} chooses no option`);
    return [];
  }
  const defaults = isDefaultOptions(decision.options);
  if (defaults) {
    if (given.length === 0) return ['approve'];
    if (given.length !== 1 || given[0] !== 'approve') fail('To decline, decline; approving chooses the approve option');
    return given;
  }
  if (decision.shape === 'option_select' && given.length !== 1) fail('Choose exactly one option');
  if (decision.shape === 'option_multiselect' && given.length === 0) fail('Choose at least one option');
  return given;
}
