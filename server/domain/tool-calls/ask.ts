/**
 * The decision a guarded call waits on: raised for the call's exact arguments, or, when the same
 * key already asked for the same call (same server, tool and arguments) and its decision is still
 * pending or approved and not yet used, that one: a client that hung up and calls again joins the
 * decision it left, and an approved call runs once.
 */
import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionGrants, decisions, type McpGuard } from '@/db/schema';
import { lockWorkspaceLedger } from '@/server/ledger/append';
import type { Actor } from '../actor';
import { createDecision } from '../decisions/create-decision';
import { actionDigest } from '../grants/action';

export interface AskInput {
  server_id: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The guard that asks (null: the server's default mode asks). */
  guard: McpGuard | null;
}

/** The action a gateway call is approved as: the server's and tool's names, and the arguments. */
export const gatewayAction = (server: string, tool: string, args: Record<string, unknown>) => ({
  tool: `${server}.${tool}`,
  arguments: args,
});

export async function raiseOrJoin(tx: Tx, actor: Actor, input: AskInput): Promise<{ decisionId: string; joined: boolean }> {
  const action = gatewayAction(input.server, input.tool, input.arguments);
  const digest = actionDigest(action);
  // One at a time per workspace: two retries of one call that arrive together find one decision.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [open] = await tx
    .select({ id: decisions.id })
    .from(decisions)
    .leftJoin(decisionGrants, eq(decisionGrants.decisionId, decisions.id))
    .where(
      and(
        eq(decisions.workspaceId, actor.workspaceId),
        eq(decisions.gatewayServerId, input.server_id),
        eq(decisions.createdById, actor.id),
        eq(decisions.actionDigest, digest),
        or(
          eq(decisions.status, 'pending'),
          and(
            eq(decisions.status, 'approved'),
            isNull(decisionGrants.consumedAt),
            isNull(decisionGrants.voidedAt),
            gt(decisionGrants.expiresAt, sql`now()`),
          ),
        ),
      ),
    )
    .orderBy(desc(decisions.createdAt))
    .limit(1);
  if (open) return { decisionId: open.id, joined: true };
  const guard = input.guard;
  const decision = await createDecision(tx, actor, {
    title: `${input.tool} on ${input.server}`,
    description:
      `An agent asks to call the tool ${input.tool} of the MCP server ${input.server} with the arguments below. ` +
      'The service calls it only once approved, with the arguments as approved, and records what it answered.',
    shape: 'generic',
    urgency: guard?.urgency ?? 'standard',
    blocks_task: false,
    on_timeout: 'expire',
    action,
    editable: guard?.editable ?? true,
    require_passkey: guard?.require_passkey,
    policy: guard?.policy,
    gateway: { server_id: input.server_id, server: input.server, tool: input.tool },
  });
  return { decisionId: decision.id, joined: false };
}
