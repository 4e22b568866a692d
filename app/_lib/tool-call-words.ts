/**
 * The MCP gateway in words: what a guard's mode does, and what came of a call of an upstream tool
 * (GET /tool-calls), for Settings → Tools and the page of a decision the gateway raised.
 */
import type { GuardMode } from '@/db/schema';
import type { ToolCallView } from '@/server/domain/tool-calls/calls';
import { when } from './format';

/** The modes in the order a person weighs them, each with what a call of the tool then does. */
export const MODES: { mode: GuardMode; words: string }[] = [
  { mode: 'allow', words: 'Allow: runs at once' },
  { mode: 'ask', words: 'Ask: runs once a human approves it' },
  { mode: 'deny', words: 'Deny: never runs' },
];

export const modeWords = (mode: GuardMode): string => MODES.find((m) => m.mode === mode)?.words ?? mode;

/** What the guard did with a call once made. */
const TAKEN: Record<GuardMode, string> = { allow: 'Let through', ask: 'Held for a human', deny: 'Refused' };
export const takenWords = (mode: GuardMode): string => TAKEN[mode] ?? mode;

/** Why a call was never sent (its `reason`): its guard, its ruling, or what its grant's use refused. */
const REASONS: Record<string, string> = {
  denied: 'refused by its guard',
  declined: 'declined',
  expired: 'the decision expired unanswered',
  cancelled: 'the decision was cancelled',
  grant_expired: 'its approval expired before it ran',
  grant_used: 'its approval was already used',
  grant_mismatch: 'the approval was for other arguments',
  grant_not_yours: 'its approval was given to another key',
  approval_stale: 'its approval went stale',
};

const reasonWords = (reason: string | null): string => (reason === null ? 'no reason recorded' : (REASONS[reason] ?? reason));

/** What came of a call, in a sentence: whether and when it ran, how long it took and what it answered. */
export function outcomeWords(call: ToolCallView): string {
  if (call.status === 'refused') return `Not run: ${reasonWords(call.reason)}`;
  if (call.status === 'forwarded') return `Sent at ${when(call.called_at)}, no answer recorded`;
  const ran = `Ran at ${when(call.called_at)} in ${call.duration_ms ?? '?'} ms`;
  if (call.result_digest === null) return `${ran}; it failed without an answer`;
  return `${ran}${call.is_error ? ', answered with an error' : ''}, result ${call.result_digest}`;
}

/** A call's outcome in a word or two, for a table row (its time and duration have columns of their own). */
export function statusWords(call: ToolCallView): string {
  if (call.status === 'refused') return `Not run: ${reasonWords(call.reason)}`;
  if (call.status === 'forwarded') return 'Sent, no answer recorded';
  if (call.result_digest === null) return 'Failed without an answer';
  return call.is_error ? 'Answered with an error' : 'Ran';
}
