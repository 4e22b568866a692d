/**
 * Presenting a grant (POST /grants/consume): a tool server shows the token it was given and the
 * digest of the action it is about to run. The grant is used up by the first presentation that
 * matches it; a presentation refused for its action, its expiry or its target is recorded too
 * (`grant.refused`), in the same transaction, and answered with its 409 once that has committed.
 *
 * The workspace's ledger is locked first, then the grant's row: of twenty presentations at once,
 * one consumes and the others then find it used.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisionGrants } from '@/db/schema';
import { appendEvents, lockWorkspaceLedger } from '@/server/ledger/append';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { AppError } from '@/server/errors';
import type { Actor } from '../actor';
import { taskVersion } from './action';
import { mayUseGrant } from './azp';
import { grantIdOf, grantToken, sameToken, type GrantRow } from './token';

export interface PresentInput {
  token: string;
  action_digest: string;
}

interface Consumed {
  grant_id: string;
  decision_id: string;
  consumed_at: string;
}

type RefusalReason = 'grant_mismatch' | 'grant_expired' | 'approval_stale';

/** What the presentation came to: consumed, or refused (and recorded) with the error to answer. */
export type Presented = { consumed: Consumed } | { refused: AppError };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function presentGrant(tx: Tx, actor: Actor, input: PresentInput, settings: SigningSettings): Promise<Presented> {
  // The ledger first, as every change does (one lock order: a rebuild holds it while it rewrites
  // the grants), and so that no change to the target commits between the check and the use.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const row = await lockGrant(tx, actor, input.token, settings);
  return useGrant(tx, actor, row, input.action_digest);
}

/**
 * The grant of the approved decision `decisionId`, used for the action `actionDigest` by the key it
 * was issued to, as a presentation of its token would use it: the MCP gateway, which holds the
 * grant for the agent and runs the action itself, never hands the token out. Null when the
 * decision has no grant.
 */
export async function consumeDecisionGrant(tx: Tx, actor: Actor, decisionId: string, actionDigest: string): Promise<Presented | null> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [row] = await tx
    .select()
    .from(decisionGrants)
    .where(and(eq(decisionGrants.workspaceId, actor.workspaceId), eq(decisionGrants.decisionId, decisionId)))
    .for('update');
  return row ? useGrant(tx, actor, row, actionDigest) : null;
}

/** Uses the locked grant `row` for the action `actionDigest`: consumed, or refused and recorded. */
async function useGrant(tx: Tx, actor: Actor, row: GrantRow, actionDigest: string): Promise<Presented> {
  const input = { action_digest: actionDigest };
  // Before anything about its use: a key the grant is not for learns nothing of it, and uses nothing up.
  if (!mayUseGrant(row.azp, actor)) {
    throw new AppError('grant_not_yours', 'The grant is for the key that raised its decision, not for this one.', { grant_id: row.id });
  }
  if (row.consumedAt) {
    throw new AppError('grant_used', `The grant was consumed at ${row.consumedAt.toISOString()}.`, {
      grant_id: row.id,
      consumed_at: row.consumedAt.toISOString(),
    });
  }
  const now = new Date();
  const refuse = async (reason: RefusalReason, message: string, currentVersion: number | null = null): Promise<Presented> => {
    await refuseGrant(tx, actor, row, reason, input.action_digest, currentVersion, now);
    const details: Record<string, unknown> = { grant_id: row.id, decision_id: row.decisionId };
    if (reason === 'grant_mismatch') details.action_digest = input.action_digest;
    if (reason === 'grant_expired') details.expired_at = row.expiresAt.toISOString();
    if (reason === 'approval_stale')
      Object.assign(details, { target_id: row.targetId, version: row.targetVersion, current_version: currentVersion });
    return { refused: new AppError(reason, message, details) };
  };
  if (row.voidedAt) {
    const current = row.targetId ? await taskVersion(tx, actor.workspaceId, row.targetId) : null;
    return refuse('approval_stale', 'The grant is void: its task changed after the approval. Raise a new decision.', current);
  }
  if (row.expiresAt.getTime() <= now.getTime()) {
    return refuse('grant_expired', `The grant expired at ${row.expiresAt.toISOString()}.`);
  }
  if (input.action_digest !== row.actionDigest) {
    return refuse('grant_mismatch', 'The grant is for another action: its digest is not the one presented. The grant stays usable.');
  }
  if (row.targetId !== null) {
    const current = await taskVersion(tx, actor.workspaceId, row.targetId);
    if (current !== row.targetVersion) {
      return refuse(
        'approval_stale',
        `The task is at version ${current}, not ${row.targetVersion} as approved: the approval is void. Raise a new decision.`,
        current,
      );
    }
  }
  const [consumed] = await tx
    .update(decisionGrants)
    .set({
      consumedAt: now,
      consumedByType: actor.type,
      consumedById: actor.id,
      updatedAt: now,
      version: sql`${decisionGrants.version} + 1`,
    })
    .where(eq(decisionGrants.id, row.id))
    .returning();
  const body: Consumed = { grant_id: row.id, decision_id: row.decisionId, consumed_at: consumed!.consumedAt!.toISOString() };
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'grant',
        aggregateId: row.id,
        eventType: 'grant.consumed',
        payload: { ...body, action_digest: row.actionDigest },
      },
    ],
    now,
  );
  return { consumed: body };
}

/**
 * The grant a token names, locked: in the caller's workspace, and the very token this service
 * signs for it (a token with a changed claim or signature names a grant but is not its token).
 */
async function lockGrant(tx: Tx, actor: Actor, token: string, settings: SigningSettings): Promise<GrantRow> {
  const notAGrant = (message: string) => new AppError('validation_failed', message, { issues: [{ path: 'token', message }] });
  const id = grantIdOf(token);
  if (id === null || !UUID.test(id)) throw notAGrant('is not a grant token: a compact JWS whose jti is a grant id');
  const [row] = await tx
    .select()
    .from(decisionGrants)
    .where(and(eq(decisionGrants.workspaceId, actor.workspaceId), eq(decisionGrants.id, id.toLowerCase())))
    .for('update');
  if (!row) throw new AppError('not_found', 'No grant with that id in this workspace.', { fields: ['token'] });
  if (!sameToken(token, await grantToken(tx, row, settings))) throw notAGrant('is not the token this service issued for that grant');
  return row;
}

/** Records a refused presentation; a target that changed voids the grant from then on. */
async function refuseGrant(
  tx: Tx,
  actor: Actor,
  row: GrantRow,
  reason: RefusalReason,
  presentedDigest: string,
  currentVersion: number | null,
  now: Date,
): Promise<void> {
  await tx
    .update(decisionGrants)
    .set({
      updatedAt: now,
      version: sql`${decisionGrants.version} + 1`,
      ...(reason === 'approval_stale' && !row.voidedAt ? { voidedAt: now } : {}),
    })
    .where(eq(decisionGrants.id, row.id));
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'grant',
        aggregateId: row.id,
        eventType: 'grant.refused',
        payload: {
          grant_id: row.id,
          decision_id: row.decisionId,
          reason,
          action_digest: row.actionDigest,
          presented_digest: presentedDigest,
          current_version: currentVersion,
        },
      },
    ],
    now,
  );
}
