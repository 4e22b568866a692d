/**
 * The gateway's tool calls' slice of the event registry, its projection rules, and the one
 * `toolCallRow(payload)` the write (calls.ts) and the replay both make a call's row with. The
 * payloads hold digests of the arguments and the result, never them: what a tool was sent or
 * answered may be anything (a customer's data, a secret it read), and every member reads the
 * ledger. The arguments an approver saw and approved are the decision's action.
 */
import { z } from 'zod';
import { guardModes, type toolCalls } from '@/db/schema';
import { readBack, type PayloadOf } from '@/server/ledger/event-types';
import { metaOf, must, type RowMeta, type RulesOf } from '../projection';

type ToolCallRow = typeof toolCalls.$inferSelect;

/** What every call's first event says: which tool of which server, how it was guarded, who called, with what. */
const callFields = {
  id: z.string(),
  server_id: z.string(),
  server: z.string(),
  tool: z.string(),
  mode: z.enum(guardModes),
  /** `sha256:` + hex SHA-256 of the RFC 8785 JSON of the arguments. */
  arguments_digest: z.string(),
  key_id: z.string(),
  run_id: z.string().nullable(),
  decision_id: z.string().nullable(),
};

/** The call is about to be sent upstream: allowed by its guard, or approved (the grant consumed in the same transaction). */
const toolCallForwarded = z.object({ ...callFields, grant_id: z.string().nullable() });

/** The upstream answered (or failed to: `is_error`, and no result digest when no result came). */
const toolCallReturned = z.object({
  id: z.string(),
  result_digest: z.string().nullable(),
  is_error: z.boolean(),
  duration_ms: z.number(),
});

/** The call was not sent: its guard denies it, or its decision was declined, expired or cancelled. */
const toolCallRefused = z.object({ ...callFields, reason: z.string() });

export const toolCallEvents = {
  'tool_call.forwarded': readBack('tool_call', toolCallForwarded),
  'tool_call.returned': readBack('tool_call', toolCallReturned),
  'tool_call.refused': readBack('tool_call', toolCallRefused),
};

/** A call's row as its first event (forwarded or refused) makes it. */
export const toolCallRow = (p: PayloadOf<'tool_call.forwarded'> | PayloadOf<'tool_call.refused'>, m: RowMeta): ToolCallRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
  serverId: p.server_id,
  server: p.server,
  tool: p.tool,
  mode: p.mode,
  status: 'reason' in p ? 'refused' : 'forwarded',
  argumentsDigest: p.arguments_digest,
  keyId: p.key_id,
  runId: p.run_id,
  decisionId: p.decision_id,
  grantId: 'grant_id' in p ? p.grant_id : null,
  reason: 'reason' in p ? p.reason : null,
  resultDigest: null,
  isError: null,
  durationMs: null,
  returnedAt: null,
});

/** What `tool_call.returned` changes of a forwarded call's row. */
export const returnedChanges = (p: PayloadOf<'tool_call.returned'>, at: Date) => ({
  status: 'returned' as const,
  resultDigest: p.result_digest,
  isError: p.is_error,
  durationMs: p.duration_ms,
  returnedAt: at,
  updatedAt: at,
});

export const toolCallRules: RulesOf<typeof toolCallEvents> = {
  'tool_call.forwarded': (state, event) => state.toolCalls.set(event.aggregateId, toolCallRow(event.payload, metaOf(event))),
  'tool_call.refused': (state, event) => state.toolCalls.set(event.aggregateId, toolCallRow(event.payload, metaOf(event))),
  'tool_call.returned': (state, event) => {
    const row = must(state.toolCalls.get(event.aggregateId), event);
    const meta = metaOf(event);
    Object.assign(row, returnedChanges(event.payload, meta.at), { version: meta.version });
  },
};
