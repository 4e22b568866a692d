/**
 * A call of an upstream tool through the gateway (`<server>__<tool>` at /mcp): the server's guard
 * for the tool decides, and the ledger records what came of it.
 *
 * - deny: refused here, the upstream never reached (`tool_call.refused`).
 * - allow: recorded as forwarded, then sent; its answer recorded as returned.
 * - ask: a decision for the exact call is raised (or joined, when the same key's same call is
 *   already waiting), and the call waits for its ruling as request_decision does. Approved, the
 *   grant is used for the arguments as approved (edited, perhaps) in the same transaction that
 *   records the call as forwarded, and those arguments are sent, once. Declined, expired or
 *   cancelled, the upstream is never called.
 *
 * The agent gets the upstream's result as it came, or a tool error that says why there is none.
 * The upstream's credential never leaves the service: the agent holds only its own key.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Tx } from '@/db';
import type { GuardMode, McpGuard, UpstreamTool } from '@/db/schema';
import { actionArguments } from '@/server/api/routers/decisions/schemas';
import type { Actor } from '@/server/domain/actor';
import { EMPTY_CONTEXT_MANIFEST_DIGEST } from '@/server/domain/actor';
import { guardFor } from '@/server/domain/mcp-servers/guards';
import { gatewayAction, raiseOrJoin } from '@/server/domain/tool-calls/ask';
import {
  isRunOf,
  recordForwarded,
  recordRefused,
  recordRuledOut,
  ServerChanged,
  type ToolCallFacts,
} from '@/server/domain/tool-calls/calls';
import { consumeDecisionGrant } from '@/server/domain/grants/consume';
import { AppError } from '@/server/errors';
import { exposedName, targetOf, upstreamKeyOf, type GatewayServer } from '@/server/gateway/catalog';
import { UpstreamError } from '@/server/gateway/upstream';
import { digestOf } from '@/server/ledger/canonical';
import { recordAnswers } from './answers';
import type { Caller, ToolAnswer } from './call';
import { waitForRuling, type WaitCall, type WaitEnd } from './request-decision';
import type { McpContext } from './sessions';
import { WAIT_SECONDS_MAX } from './tools';
import type { McpSession } from './transport';

/** How long a guarded call waits for its ruling before it answers that it is still pending (the agent may call again to wait on). */
const ASK_WAIT_SECONDS = WAIT_SECONDS_MAX;

/** A tool error: the agent's model reads `text`; nothing was sent upstream unless it says so. */
function toolError(text: string, meta: Record<string, unknown> = {}): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: meta };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The key's actor for one gateway call (its own request id: the events it records share it). */
function actorOf(caller: Caller): Actor {
  const key = caller.presented.key!;
  const requestId = randomUUID();
  return {
    type: 'api_key',
    id: key.keyId,
    ownerId: key.ownerUserId,
    workspaceId: key.workspaceId,
    trace: { requestId, correlationId: requestId, idempotencyKey: null, contextManifestDigest: EMPTY_CONTEXT_MANIFEST_DIGEST },
  };
}

/**
 * One call, as a call waiting for its ruling holds it: the names of the server and tool, how its
 * guard took it, and who made it. Not the server's row: that holds every tool's schema, and a
 * thousand calls may wait at once; an approved call reads it again (from the catalog) to be sent.
 */
interface HeldCall {
  ctx: McpContext;
  actor: Actor;
  serverId: string;
  serverName: string;
  toolName: string;
  mode: GuardMode;
  guard: McpGuard | null;
  index: number | null;
  runId: string | null;
}

/** A call about to be recorded or sent: with the server's row (where it is, its version) and the tool. */
interface GatewayCall extends HeldCall {
  server: GatewayServer;
  tool: UpstreamTool;
}

const callOf = (held: HeldCall, found: { server: GatewayServer; tool: UpstreamTool }): GatewayCall => ({
  ...held,
  ...found,
  serverId: found.server.id,
  serverName: found.server.name,
  toolName: found.tool.name,
});

/**
 * Answers a tools/call of `name` when it names an upstream tool of the caller's workspace; null
 * when it does not (the dispatch then says there is no such tool).
 */
export async function callGatewayTool(
  ctx: McpContext,
  session: McpSession,
  caller: Caller,
  name: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  call: WaitCall,
): Promise<CallToolResult | null> {
  const key = caller.presented.key!;
  let found = await ctx.servers.tool(ctx.runtime.db, key.workspaceId, name);
  if (!found) return null;
  const runId = meta?.run_id;
  if (runId !== undefined && (typeof runId !== 'string' || !UUID.test(runId) || !(await isRunOf(ctx.runtime.db, key.workspaceId, runId)))) {
    return toolError('_meta.run_id names no run of this workspace: send the id of the run the call is made under, or leave it out.');
  }
  const actor = actorOf(caller);
  for (let fresh = false; ; fresh = true) {
    if (fresh) found = await ctx.servers.tool(ctx.runtime.db, key.workspaceId, name, true);
    if (!found) return null;
    const match = guardFor(found.server, found.tool.name);
    // A call put to a human waits long, and is decided on the server as it is now.
    if (match.mode === 'ask' && !fresh) continue;
    const gc = callOf(
      { ctx, actor, ...match, serverId: '', serverName: '', toolName: '', runId: (runId as string | undefined) ?? null },
      found,
    );
    // Handed on, not awaited: while it waits, this frame (and the server's row in it) is gone.
    if (match.mode === 'ask') return ask(gc, session, caller, args, call);
    try {
      if (match.mode === 'deny') return await deny(gc, args);
      return await forward(gc, args, null);
    } catch (err) {
      // Decided on a server that changed since it was read: decided again on what it is now, once.
      if (!(err instanceof ServerChanged) || fresh) throw err;
    }
  }
}

/** What every event of the call says of it. */
function factsOf(gc: HeldCall, args: Record<string, unknown>, decisionId: string | null): ToolCallFacts {
  return {
    server_id: gc.serverId,
    server: gc.serverName,
    tool: gc.toolName,
    mode: gc.mode,
    arguments_digest: digestOf(args),
    run_id: gc.runId,
    decision_id: decisionId,
  };
}

/** Which guard took the call, as a person reads it. */
function guardWords(gc: HeldCall): string {
  return gc.guard ? `guard #${gc.index! + 1} (tool "${gc.guard.tool}", ${gc.guard.mode})` : `the server's default mode (${gc.mode})`;
}

/**
 * One transaction of the call, grouped with the workspace's other writes that arrive with it, and
 * recording the answers of earlier calls that wait to be (server/mcp/answers.ts).
 */
async function write<T>(gc: HeldCall, work: (tx: Tx) => Promise<T>): Promise<T> {
  const { answers, runtime } = gc.ctx;
  const workspaceId = gc.actor.workspaceId;
  const earlier = answers.take(workspaceId);
  try {
    return await runtime.db.transaction(
      async (tx) => {
        const done = await work(tx);
        // After the call's own writes: they may append at once, and these append at COMMIT.
        await recordAnswers(tx, earlier);
        return done;
      },
      { group: workspaceId },
    );
  } catch (err) {
    answers.putBack(runtime.db, workspaceId, earlier);
    throw err;
  }
}

async function deny(gc: GatewayCall, args: Record<string, unknown>): Promise<CallToolResult> {
  const id = await write(gc, (tx) => recordRefused(tx, gc.actor, { ...factsOf(gc, args, null), reason: 'denied' }, gc.server.version));
  return toolError(`${gc.toolName} on ${gc.serverName} is not allowed: refused by ${guardWords(gc)}. The MCP server was not called.`, {
    'aws/tool_call_id': id,
  });
}

/**
 * Records the call as forwarded (for an approved one, with its grant used in the same
 * transaction), sends it, and records the answer. `approved`: the decision and the grant's use,
 * for an asked call.
 */
async function forward(
  gc: GatewayCall,
  args: Record<string, unknown>,
  approved: { decisionId: string; actionDigest: string } | null,
): Promise<CallToolResult> {
  const facts = factsOf(gc, args, approved?.decisionId ?? null);
  const opened: { id: string } | { refused: AppError } = await write(gc, async (tx) => {
    if (!approved) return { id: await recordForwarded(tx, gc.actor, { ...facts, grant_id: null }, gc.server.version) };
    const used = await consumeDecisionGrant(tx, gc.actor, approved.decisionId, approved.actionDigest);
    if (!used) throw new Error(`approved decision ${approved.decisionId} has no grant`);
    if ('refused' in used) {
      await recordRefused(tx, gc.actor, { ...facts, reason: used.refused.code });
      return { refused: used.refused };
    }
    return { id: await recordForwarded(tx, gc.actor, { ...facts, grant_id: used.consumed.grant_id }) };
  });
  if ('refused' in opened) {
    return toolError(`${gc.toolName} on ${gc.serverName} was not called: ${opened.refused.message}`, { 'aws/code': opened.refused.code });
  }
  const started = performance.now();
  let result: CallToolResult;
  let received: CallToolResult | null = null;
  try {
    received = await gc.ctx
      .upstreams()
      .call(upstreamKeyOf(gc.server), targetOf(gc.server, gc.ctx.runtime.secrets.webhook), gc.toolName, args);
    result = received;
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    result = toolError(`${gc.toolName} on ${gc.serverName} failed: ${err.message}`, { 'aws/tool_call_id': opened.id });
  }
  const returned = {
    id: opened.id,
    result_digest: received ? digestOf(received) : null,
    is_error: result.isError === true,
    duration_ms: Math.round(performance.now() - started),
  };
  // Recorded after the answer is given, not before (server/mcp/answers.ts): the call was recorded
  // as forwarded before a byte went upstream.
  gc.ctx.answers.add(gc.ctx.runtime.db, gc.actor, returned);
  return result;
}

/** Calls of approved decisions being forwarded in this process: a second waiter of the same decision gets the first's answer. */
const forwarding = new Map<string, Promise<CallToolResult>>();

async function ask(
  gc: GatewayCall,
  session: McpSession,
  caller: Caller,
  args: Record<string, unknown>,
  call: WaitCall,
): Promise<CallToolResult> {
  // The arguments become the decision's action: they must be what an action may hold.
  const fits = actionArguments().safeParse(args);
  if (!fits.success) {
    return toolError(
      `${gc.toolName} on ${gc.serverName} needs a human's approval, and its arguments cannot be put to one: ${fits.error.issues[0]?.message ?? 'invalid'}. Nothing was recorded.`,
    );
  }
  const raise = async () => {
    const { decisionId } = await write(gc, (tx) =>
      raiseOrJoin(tx, gc.actor, { server_id: gc.serverId, server: gc.serverName, tool: gc.toolName, arguments: args, guard: gc.guard }),
    );
    return { id: decisionId, title: `${gc.toolName} on ${gc.serverName}` };
  };
  const held: HeldCall = {
    ctx: gc.ctx,
    actor: gc.actor,
    serverId: gc.serverId,
    serverName: gc.serverName,
    toolName: gc.toolName,
    mode: gc.mode,
    guard: gc.guard,
    index: gc.index,
    runId: gc.runId,
  };
  return waitForRuling(gc.ctx, session, caller, call, ASK_WAIT_SECONDS, raise, (answer, ended) => afterRuling(held, args, answer, ended));
}

interface DecisionAnswer {
  id: string;
  status: 'pending' | 'approved' | 'declined' | 'cancelled' | 'expired';
  approved_action: { tool: string; arguments: Record<string, unknown> } | null;
  resolution: { note: string | null; resolved_by_name: string | null } | null;
}

/** What the call comes to once its wait is over: run as approved, refused as ruled, or still pending. */
async function afterRuling(gc: HeldCall, args: Record<string, unknown>, answer: ToolAnswer, ended: WaitEnd): Promise<CallToolResult> {
  const decision = (answer.body as { decision?: DecisionAnswer }).decision;
  if (answer.status >= 400 || !decision) {
    return toolError(`${gc.toolName} on ${gc.serverName} was not called: its decision could not be read (${answer.status}).`);
  }
  const page = new URL(`/decisions/${decision.id}`, gc.ctx.runtime.env.APP_URL).toString();
  const meta = { 'aws/decision_id': decision.id, 'aws/decision_status': decision.status };
  if (decision.status === 'pending') {
    const why =
      ended === 'service_stopping' ? 'the service is restarting' : ended === 'cancelled' ? 'the call was cancelled' : 'the wait ended';
    return toolError(
      `${gc.toolName} on ${gc.serverName} is waiting for a human's approval (${page}) and was not called: ${why}. ` +
        'Call it again with the same arguments to keep waiting on the same decision.',
      meta,
    );
  }
  if (decision.status !== 'approved') {
    const note = decision.resolution?.note ? ` Their note: “${decision.resolution.note}”` : '';
    const by = decision.resolution?.resolved_by_name ? ` by ${decision.resolution.resolved_by_name}` : '';
    await write(gc, (tx) =>
      recordRuledOut(tx, gc.actor, { ...factsOf(gc, args, decision.id), decision_id: decision.id, reason: decision.status }),
    );
    return toolError(`${gc.toolName} on ${gc.serverName} was ${decision.status}${by} and was not called.${note}`, meta);
  }
  const approvedArgs = decision.approved_action?.arguments ?? args;
  const running = forwarding.get(decision.id);
  if (running) return running;
  const run = sendApproved(gc, approvedArgs, decision.id, meta);
  forwarding.set(decision.id, run);
  try {
    return await run;
  } finally {
    forwarding.delete(decision.id);
  }
}

/** Sends an approved call, its server read again: where it is and its credential as they are now. */
async function sendApproved(
  held: HeldCall,
  approvedArgs: Record<string, unknown>,
  decisionId: string,
  meta: Record<string, unknown>,
): Promise<CallToolResult> {
  const { ctx, actor } = held;
  const found = await ctx.servers.tool(ctx.runtime.db, actor.workspaceId, exposedName(held.serverName, held.toolName));
  if (!found || found.server.id !== held.serverId) {
    await write(held, (tx) =>
      recordRuledOut(tx, actor, { ...factsOf(held, approvedArgs, decisionId), decision_id: decisionId, reason: 'server_removed' }),
    );
    return toolError(`${held.toolName} on ${held.serverName} was approved, but the server no longer offers it: it was not called.`, meta);
  }
  const gc = callOf(held, found);
  return forward(gc, approvedArgs, {
    decisionId,
    actionDigest: digestOf(gatewayAction(gc.serverName, gc.toolName, approvedArgs)),
  }).catch((err: unknown) => {
    // Another request (another instance) used the grant first: the call ran there, once.
    if (err instanceof AppError && err.code === 'grant_used') {
      return toolError(
        `${gc.toolName} on ${gc.serverName} was approved and has already been called, once, by an earlier request of the same call.`,
        meta,
      );
    }
    throw err;
  });
}
