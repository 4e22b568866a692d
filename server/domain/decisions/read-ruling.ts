/**
 * What a ruling says, checked against the decision it is on, before its policy counts it: whether
 * the person may rule at all (a pending decision, not their own), which options it chooses, the
 * action it approves and that action's digest (computed once per ruling), and the statement a
 * passkey signs for it. Pure, like decide.ts, which takes what this reads.
 */
import type { DecisionAction } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';
import { AppError } from '@/server/errors';
import type { Ruled } from '../passkeys/ruling';
import { isDefaultOptions } from './options';
import type { DecisionRow } from './view';

/** The decision as a ruling reads it. */
export type DecisionState = Pick<
  DecisionRow,
  | 'id'
  | 'status'
  | 'createdByType'
  | 'createdById'
  | 'shape'
  | 'options'
  | 'action'
  | 'editable'
  | 'requirePasskey'
  | 'targetVersion'
  | 'approvals'
  | 'declines'
  | 'escalatedSteps'
>;

/** What the person ruling asks for. */
export interface RulingIntent {
  outcome: 'approved' | 'declined' | 'cancelled';
  option_ids?: string[];
  /** Approving an editable decision's action: the arguments as the approver changed them. */
  arguments?: Record<string, unknown>;
  /** Whether the ruling comes with a passkey assertion (the shell checks the assertion itself). */
  passkey: boolean;
}

/** What a ruling says, checked against the decision: the options chosen, the action approved and its digest. */
export interface Reading {
  optionIds: string[];
  approved: { action: DecisionAction; digest: string } | null;
  /** What a passkey signs for this approval (server/domain/passkeys/ruling.ts); null for other rulings. */
  statement: Ruled | null;
}

const invalid = (path: string, message: string) => new AppError('validation_failed', message, { issues: [{ path, message }] });

/** 409 decision_not_pending. */
export const notPending = (status: string | undefined) =>
  new AppError('decision_not_pending', `The decision is already ${status ?? 'resolved'}.`, { status });

export const raisedBy = (d: Pick<DecisionState, 'createdByType' | 'createdById'>) => (d.createdByType === 'human' ? d.createdById : null);

/**
 * Checks what `by` asks of the decision and reads what it says: 409 when it is no longer pending,
 * 403 to whoever raised it (but for cancelling), 400 for options, arguments or a passkey it cannot
 * take, passkey_required when it needs one. The action's digest is computed here, once.
 */
export function readRuling(decision: DecisionState, byId: string, intent: RulingIntent): Reading {
  if (decision.status !== 'pending') throw notPending(decision.status);
  if (intent.outcome !== 'cancelled' && raisedBy(decision) === byId) {
    throw new AppError('forbidden', 'You raised this decision; another owner or approver must rule on it.');
  }
  return reading(decision, byId, intent);
}

/**
 * What an approval of `decision` by `approverId` with these choices says, as a passkey signs it
 * (the statement without its nonce and time). Throws what the approval itself would refuse of them.
 */
export function ruledBy(decision: DecisionState, approverId: string, input: Pick<RulingIntent, 'option_ids' | 'arguments'>): Ruled {
  return reading(decision, approverId, { outcome: 'approved', ...input, passkey: true }).statement!;
}

function reading(decision: DecisionState, byId: string, intent: RulingIntent): Reading {
  const optionIds = chosenOptions(decision, intent);
  const action = approvedAction(decision, intent);
  const approved = action ? { action, digest: digestOf(action) } : null;
  if (intent.outcome !== 'approved') {
    if (intent.passkey) throw invalid('passkey', 'Only an approval is signed with a passkey');
  } else if (!intent.passkey && decision.requirePasskey) {
    throw new AppError('passkey_required', 'This decision is approved only with your passkey: approve it on its page.');
  }
  return { optionIds, approved, statement: intent.outcome === 'approved' ? statementOf(decision.id, byId, optionIds, approved) : null };
}

function statementOf(decisionId: string, approverId: string, optionIds: string[], approved: Reading['approved']): Ruled {
  return {
    decision_id: decisionId,
    outcome: 'approved',
    option_id: optionIds.length === 1 ? optionIds[0]! : null,
    option_ids: optionIds,
    action_digest: approved?.digest ?? null,
    approver_id: approverId,
  };
}

/**
 * Which options a ruling chooses. Declining chooses none. Approving an option_select decision
 * chooses exactly one (the default approve/decline pair implies `approve`), an option_multiselect
 * at least one; other shapes may name options they have.
 */
function chosenOptions(decision: DecisionState, intent: RulingIntent): string[] {
  const given = [...new Set(intent.option_ids ?? [])];
  const known = new Set(decision.options.map((o) => o.id));
  for (const id of given) if (!known.has(id)) throw invalid('option_ids', `Option ${id} is not one of the decision’s options`);
  if (intent.outcome !== 'approved') {
    if (given.length > 0) throw invalid('option_ids', `${intent.outcome === 'declined' ? 'Declining' : 'Cancelling'} chooses no option`);
    return [];
  }
  if (isDefaultOptions(decision.options)) {
    if (given.length === 0) return ['approve'];
    if (given.length !== 1 || given[0] !== 'approve')
      throw invalid('option_ids', 'To decline, decline; approving chooses the approve option');
    return given;
  }
  if (decision.shape === 'option_select' && given.length !== 1) throw invalid('option_ids', 'Choose exactly one option');
  if (decision.shape === 'option_multiselect' && given.length === 0) throw invalid('option_ids', 'Choose at least one option');
  return given;
}

/**
 * The action an approval approves: the decision's, with the approver's arguments when it is
 * editable and they changed them. Null for a decision without an action, and for other rulings.
 */
function approvedAction(decision: DecisionState, intent: RulingIntent): DecisionAction | null {
  if (intent.arguments !== undefined && !(intent.outcome === 'approved' && decision.action && decision.editable)) {
    const message = !decision.action
      ? 'The decision has no action to change'
      : !decision.editable
        ? 'The decision’s action is not editable'
        : 'Only an approval changes the action';
    throw invalid('arguments', message);
  }
  if (intent.outcome !== 'approved' || !decision.action) return null;
  return intent.arguments === undefined ? decision.action : { ...decision.action, arguments: intent.arguments };
}
