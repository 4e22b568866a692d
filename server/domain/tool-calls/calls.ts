/**
 * The gateway's tool calls as the ledger records them: each forwarded call (`tool_call.forwarded`,
 * before a byte goes upstream, and for an approved call in the same transaction as its grant's use),
 * its answer (`tool_call.returned`), and each call not sent (`tool_call.refused`), with the row the
 * replay would make of them (events.ts). Services `(tx, actor, input)`; the gateway
 * (server/mcp/gateway-call.ts) decides, these record.
 *
 * The events are appended at COMMIT (appendEventsAtCommit): nothing here needs their sequence, and
 * the forwarded event of an allowed call is on the path of every call through the gateway.
 */
import { randomUUID } from 'node:crypto';
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { mcpServers, runs, toolCalls, type GuardMode } from '@/db/schema';
import { appendEventsAtCommit, lockWorkspaceLedger } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import type { Actor } from '../actor';
import { olderThan, type CreatedKey } from '../paging';
import { returnedChanges, toolCallRow } from './events';

/** The call as the gateway saw it: which tool of which server, how its guard took it, what it was sent with. */
export interface ToolCallFacts {
  server_id: string;
  server: string;
  tool: string;
  mode: GuardMode;
  arguments_digest: string;
  run_id: string | null;
  decision_id: string | null;
}

/**
 * The server's settings changed since the gateway read them (its guards, or it was removed): the
 * call is decided again on what they are now. Nothing was recorded.
 */
export class ServerChanged extends Error {
  constructor() {
    super('the MCP server changed since its guards were read');
  }
}

/**
 * Inserts a call's row, checking in the same flight that the server is still at `serverVersion`
 * (the version its guard was read at; undefined: read in this transaction, nothing to check).
 * Throws ServerChanged, before anything is appended, when it is not.
 */
async function insertCall(tx: Tx, row: typeof toolCalls.$inferInsert, serverVersion: number | undefined): Promise<void> {
  const insert = tx.insert(toolCalls).values(row);
  if (serverVersion === undefined) return void (await insert);
  const [[server]] = await Promise.all([
    tx
      .select({ version: mcpServers.version })
      .from(mcpServers)
      .where(and(eq(mcpServers.workspaceId, row.workspaceId), eq(mcpServers.id, row.serverId))),
    insert,
  ]);
  if (server?.version !== serverVersion) throw new ServerChanged();
}

/** Records that the call is about to be forwarded; answers its id. */
export async function recordForwarded(
  tx: Tx,
  actor: Actor,
  facts: ToolCallFacts & { grant_id: string | null },
  serverVersion?: number,
): Promise<string> {
  const payload: PayloadOf<'tool_call.forwarded'> = { id: randomUUID(), ...facts, key_id: actor.id };
  const now = new Date();
  await insertCall(tx, toolCallRow(payload, { workspaceId: actor.workspaceId, version: 1, at: now }), serverVersion);
  appendEventsAtCommit(
    tx,
    actor,
    [{ aggregateType: 'tool_call', aggregateId: payload.id, eventType: 'tool_call.forwarded', payload }],
    now,
  );
  return payload.id;
}

/** Records what the upstream answered a forwarded call (or that it failed: no result digest). */
export async function recordReturned(tx: Tx, actor: Actor, returned: PayloadOf<'tool_call.returned'>): Promise<void> {
  const now = new Date();
  await tx
    .update(toolCalls)
    .set({ ...returnedChanges(returned, now), version: sql`${toolCalls.version} + 1` })
    .where(and(eq(toolCalls.workspaceId, actor.workspaceId), eq(toolCalls.id, returned.id)));
  appendEventsAtCommit(
    tx,
    actor,
    [{ aggregateType: 'tool_call', aggregateId: returned.id, eventType: 'tool_call.returned', payload: returned }],
    now,
  );
}

/** Records a call that was not sent, and why (`serverVersion`: as recordForwarded). */
export async function recordRefused(
  tx: Tx,
  actor: Actor,
  facts: ToolCallFacts & { reason: string },
  serverVersion?: number,
): Promise<string> {
  const payload: PayloadOf<'tool_call.refused'> = { id: randomUUID(), ...facts, key_id: actor.id };
  const now = new Date();
  await insertCall(tx, toolCallRow(payload, { workspaceId: actor.workspaceId, version: 1, at: now }), serverVersion);
  appendEventsAtCommit(tx, actor, [{ aggregateType: 'tool_call', aggregateId: payload.id, eventType: 'tool_call.refused', payload }], now);
  return payload.id;
}

/**
 * Records a call its ruling refused (declined, expired, cancelled), once per decision however many
 * requests of the call were waiting on it.
 */
export async function recordRuledOut(tx: Tx, actor: Actor, facts: ToolCallFacts & { decision_id: string; reason: string }): Promise<void> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [recorded] = await tx
    .select({ id: toolCalls.id })
    .from(toolCalls)
    .where(and(eq(toolCalls.workspaceId, actor.workspaceId), eq(toolCalls.decisionId, facts.decision_id)))
    .limit(1);
  if (!recorded) await recordRefused(tx, actor, facts);
}

/** Whether `runId` is a run of the workspace (a call names the run it was made under, `_meta.run_id`). */
export async function isRunOf(db: Executor, workspaceId: string, runId: string): Promise<boolean> {
  const [run] = await db
    .select({ id: runs.id })
    .from(runs)
    .where(and(eq(runs.workspaceId, workspaceId), eq(runs.id, runId)));
  return run !== undefined;
}

export interface ToolCallView {
  id: string;
  server_id: string;
  server: string;
  tool: string;
  mode: GuardMode;
  status: 'forwarded' | 'returned' | 'refused';
  reason: string | null;
  arguments_digest: string;
  key_id: string;
  run_id: string | null;
  decision_id: string | null;
  grant_id: string | null;
  result_digest: string | null;
  is_error: boolean | null;
  duration_ms: number | null;
  called_at: string;
  returned_at: string | null;
}

const toolCallView = (row: typeof toolCalls.$inferSelect): ToolCallView => ({
  id: row.id,
  server_id: row.serverId,
  server: row.server,
  tool: row.tool,
  mode: row.mode,
  status: row.status,
  reason: row.reason,
  arguments_digest: row.argumentsDigest,
  key_id: row.keyId,
  run_id: row.runId,
  decision_id: row.decisionId,
  grant_id: row.grantId,
  result_digest: row.resultDigest,
  is_error: row.isError,
  duration_ms: row.durationMs,
  called_at: row.createdAt.toISOString(),
  returned_at: row.returnedAt?.toISOString() ?? null,
});

/** The workspace's calls, newest first, narrowed to a server, a decision or a run (keyset paging). */
export async function listToolCalls(
  db: Executor,
  workspaceId: string,
  q: { serverId?: string; decisionId?: string; runId?: string; after?: CreatedKey; limit: number },
): Promise<(ToolCallView & { key: CreatedKey })[]> {
  const rows = await db
    .select()
    .from(toolCalls)
    .where(
      and(
        eq(toolCalls.workspaceId, workspaceId),
        q.serverId ? eq(toolCalls.serverId, q.serverId) : undefined,
        q.decisionId ? eq(toolCalls.decisionId, q.decisionId) : undefined,
        q.runId ? eq(toolCalls.runId, q.runId) : undefined,
        olderThan(toolCalls.createdAt, toolCalls.id, q.after),
      ),
    )
    .orderBy(desc(toolCalls.createdAt), desc(toolCalls.id))
    .limit(q.limit);
  return rows.map((r) => ({ ...toolCallView(r), key: { createdAt: r.createdAt, id: r.id } }));
}
