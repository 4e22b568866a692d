/**
 * The grants' slice of the event registry, their projection rules, and the one `grantRow(payload)`
 * that makes an issued grant's row on the write (issue.ts) and on the replay. A grant's events say
 * what its token says, never the token.
 */
import { z } from 'zod';
import type { decisionGrants } from '@/db/schema';
import { readBack, type PayloadOf, type TypedEvent } from '@/server/ledger/event-types';
import { metaOf, must, touch, type ProjectionState, type RowMeta, type RulesOf } from '../projection';
import { azpOfRaiser } from './azp';

type GrantRow = typeof decisionGrants.$inferSelect;

/** The grant issued on an approval (issue.ts). */
const grantIssued = z.object({
  grant_id: z.string(),
  decision_id: z.string(),
  action_digest: z.string(),
  target: z.object({ type: z.literal('task'), id: z.string(), version: z.number() }).nullable(),
  approver: z.object({ type: z.literal('human'), id: z.string(), passkey: z.boolean() }),
  key_id: z.string(),
  /** Whom the grant is for (azp.ts); absent from grants issued before it was recorded: their decision's raiser. */
  azp: z.string().nullable().optional(),
  issued_at: z.string(),
  expires_at: z.string(),
});

/** A grant used (POST /grants/consume). */
const grantConsumed = z.object({ grant_id: z.string(), decision_id: z.string(), action_digest: z.string(), consumed_at: z.string() });

/**
 * A grant presented and refused, with why: another action's digest (the grant stays usable), past
 * its expiry, or its target changed (the grant is void from then on).
 */
const grantRefused = z.object({
  grant_id: z.string(),
  decision_id: z.string(),
  reason: z.enum(['grant_mismatch', 'grant_expired', 'approval_stale']),
  action_digest: z.string(),
  presented_digest: z.string(),
  current_version: z.number().nullable(),
});

export const grantEvents = {
  'grant.issued': readBack('grant', grantIssued),
  'grant.consumed': readBack('grant', grantConsumed),
  'grant.refused': readBack('grant', grantRefused),
};

/** An issued grant's row: unused and not void. `raiser`: the decision's, for an event that names no azp. */
export const grantRow = (p: PayloadOf<'grant.issued'>, m: RowMeta, raiser?: Parameters<typeof azpOfRaiser>[0]): GrantRow => ({
  id: p.grant_id,
  workspaceId: m.workspaceId,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
  decisionId: p.decision_id,
  actionDigest: p.action_digest,
  targetId: p.target?.id ?? null,
  targetVersion: p.target?.version ?? null,
  approverId: p.approver.id,
  passkey: p.approver.passkey,
  azp: p.azp !== undefined ? p.azp : raiser ? azpOfRaiser(raiser) : null,
  keyId: p.key_id,
  issuedAt: new Date(p.issued_at),
  expiresAt: new Date(p.expires_at),
  consumedAt: null,
  consumedByType: null,
  consumedById: null,
  voidedAt: null,
});

/** A grant presented and refused, or consumed: its row moves to the event's version, and is used up or void. */
const presented = (state: ProjectionState, event: TypedEvent<'grant.consumed' | 'grant.refused'>) => {
  const row = must(state.grants.get(event.aggregateId), event);
  const at = new Date(event.occurredAtCanonical);
  if (event.eventType === 'grant.consumed')
    Object.assign(row, { consumedAt: at, consumedByType: event.actorType, consumedById: event.actorId });
  else if ('reason' in event.payload && event.payload.reason === 'approval_stale' && !row.voidedAt) row.voidedAt = at;
  touch(row, {}, event);
};

export const grantRules: RulesOf<typeof grantEvents> = {
  'grant.issued': (state, event) =>
    state.grants.set(event.aggregateId, grantRow(event.payload, metaOf(event), state.decisions.get(event.payload.decision_id))),
  'grant.consumed': presented,
  'grant.refused': presented,
};
