/**
 * The dedup claims' slice of the event registry: every claim event carries the claim after it, and
 * `claimRow(record)` (../hierarchy/records.ts) makes its row on the write and on the replay.
 */
import { z } from 'zod';
import { readBack, type TypedEvent } from '@/server/ledger/event-types';
import { metaOf, type ProjectionState, type RulesOf } from '../projection';
import { claimRecordSchema, claimRow } from '../hierarchy/records';

export const dedupEvents = {
  'dedup.claimed': readBack('dedup_claim', z.object({ claim: claimRecordSchema, ttl_seconds: z.number() })),
  'dedup.extended': readBack('dedup_claim', z.object({ claim: claimRecordSchema, ttl_seconds: z.number() })),
  'dedup.released': readBack('dedup_claim', z.object({ claim: claimRecordSchema })),
  /** The retention job removed a claim that had ended (claims.ts pruneEndedClaims). */
  'dedup.pruned': readBack('dedup_claim', z.object({ claim: claimRecordSchema })),
};

const claimChanged = (state: ProjectionState, event: TypedEvent<'dedup.claimed' | 'dedup.extended' | 'dedup.released'>) => {
  state.claims.set(event.payload.claim.claim_id, claimRow(event.payload.claim, metaOf(event)));
};

export const dedupRules: RulesOf<typeof dedupEvents> = {
  'dedup.claimed': claimChanged,
  'dedup.extended': claimChanged,
  'dedup.released': claimChanged,
  'dedup.pruned': (state, event) => state.claims.delete(event.payload.claim.claim_id),
};
