/**
 * Issuing the grant of an approved action: a row that its token is signed from (token.ts), and
 * its `grant.issued` event, in the approval's transaction (server/domain/decisions/rule.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Tx } from '@/db';
import { decisionGrants } from '@/db/schema';
import { ensureGrantKey } from '@/server/keys/grant-keys';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import type { NewEvent } from '@/server/ledger/append';
import type { DecisionRow } from '../decisions/view';
import type { Actor } from '../actor';
import type { PayloadOf } from '@/server/ledger/event-types';
import { grantRow } from './events';
import { azpOfRaiser } from './azp';

export const DEFAULT_GRANT_TTL_SECONDS = 900;
export const MAX_GRANT_TTL_SECONDS = 86_400;

/**
 * The grant for `decision`, just approved with its `approvedAction` by `actor`, for its target at
 * `targetVersion` (null without a target), signed by their passkey or not. Signed, when shown, by
 * the workspace's current grant key, made now if the workspace has none yet.
 */
export async function issueGrant(
  tx: Tx,
  actor: Actor,
  decision: DecisionRow,
  targetVersion: number | null,
  settings: SigningSettings,
  now: Date,
  passkey: boolean,
): Promise<NewEvent> {
  const action = decision.approvedAction!;
  const keyId = await ensureGrantKey(tx, decision.workspaceId, settings);
  // Whole seconds: the token's iat and exp are seconds, and the row must say what the token says.
  const issuedAt = new Date(Math.floor(now.getTime() / 1000) * 1000);
  const expiresAt = new Date(issuedAt.getTime() + (decision.grantTtlSeconds ?? DEFAULT_GRANT_TTL_SECONDS) * 1000);
  const grantId = randomUUID();
  const target = action.target && targetVersion !== null ? { type: 'task' as const, id: action.target.id, version: targetVersion } : null;
  const payload: PayloadOf<'grant.issued'> = {
    grant_id: grantId,
    decision_id: decision.id,
    action_digest: decision.approvedActionDigest!,
    target,
    approver: { type: 'human', id: actor.id, passkey },
    key_id: keyId,
    azp: azpOfRaiser(decision),
    issued_at: issuedAt.toISOString(),
    expires_at: expiresAt.toISOString(),
  };
  // The row is what the replay makes of the event: the write and the rebuild give one row.
  await tx.insert(decisionGrants).values(grantRow(payload, { workspaceId: decision.workspaceId, version: 1, at: now }));
  return { aggregateType: 'grant', aggregateId: grantId, eventType: 'grant.issued', payload };
}
