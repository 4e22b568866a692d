/**
 * The calls the gateway made to (or refused for) upstream tools: a projection of the `tool_call.*`
 * events (server/domain/tool-calls/events.ts). Like the events, a row holds digests of the
 * arguments and the result, never them: the arguments an approver saw are the decision's action.
 */
import { boolean, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns, ts } from './columns';
import { guardModes } from './mcp-servers';

export const toolCallStatuses = ['forwarded', 'returned', 'refused'] as const;
export type ToolCallStatus = (typeof toolCallStatuses)[number];

export const toolCalls = pgTable(
  'tool_calls',
  {
    ...aggregateColumns(),
    /** The server and tool called; the name kept too, as the server may be removed since. */
    serverId: uuid('server_id').notNull(),
    server: text('server').notNull(),
    tool: text('tool').notNull(),
    mode: text('mode', { enum: guardModes }).notNull(),
    status: text('status', { enum: toolCallStatuses }).notNull(),
    /** `sha256:` + hex SHA-256 of the RFC 8785 JSON of the arguments forwarded (or refused). */
    argumentsDigest: text('arguments_digest').notNull(),
    /** The calling API key. */
    keyId: text('key_id').notNull(),
    /** The run the call said it was made under (`_meta.run_id`), when it named one of the workspace. */
    runId: uuid('run_id'),
    /** ask: the decision raised, and the grant consumed for the call (its `jti`). */
    decisionId: uuid('decision_id'),
    grantId: uuid('grant_id'),
    /** refused: why (`denied`, `declined`, `expired`, `cancelled`, `grant_used`, …). */
    reason: text('reason'),
    resultDigest: text('result_digest'),
    isError: boolean('is_error'),
    durationMs: integer('duration_ms'),
    returnedAt: ts('returned_at'),
  },
  (t) => [
    index('tool_calls_server_idx').on(t.workspaceId, t.serverId, t.createdAt),
    index('tool_calls_decision_idx').on(t.decisionId),
    index('tool_calls_run_idx').on(t.runId),
  ],
);
