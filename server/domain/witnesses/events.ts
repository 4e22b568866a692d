/**
 * The named witnesses' slice of the event registry, its projection rules, and the one
 * `witnessRow(payload)` that makes a named witness's row on the write (witnesses.ts) and on the
 * replay. A witness's verifier key is public: the events carry it whole.
 */
import { z } from 'zod';
import type { ledgerWitnesses } from '@/db/schema';
import { readBack, type PayloadOf } from '@/server/ledger/event-types';
import { metaOf, must, type RowMeta, type RulesOf } from '../projection';

type WitnessRow = typeof ledgerWitnesses.$inferSelect;

/** An owner named a witness (POST /ledger/witnesses): its cosignatures are kept and served from then on. */
const witnessNamed = z.object({ id: z.string(), name: z.string(), key_id: z.string(), vkey: z.string() });

/** An owner removed it (DELETE /ledger/witnesses/{id}): its cosignatures are refused and served no more. */
const witnessRemoved = z.object({ id: z.string(), name: z.string(), key_id: z.string() });

export const witnessEvents = {
  'witness.named': readBack('witness', witnessNamed),
  'witness.removed': readBack('witness', witnessRemoved),
};

export const witnessRow = (p: PayloadOf<'witness.named'>, m: RowMeta): WitnessRow => ({
  id: p.id,
  workspaceId: m.workspaceId,
  version: m.version,
  createdAt: m.at,
  updatedAt: m.at,
  name: p.name,
  keyId: p.key_id,
  vkey: p.vkey,
});

export const witnessRules: RulesOf<typeof witnessEvents> = {
  'witness.named': (state, event) => state.witnesses.set(event.aggregateId, witnessRow(event.payload, metaOf(event))),
  'witness.removed': (state, event) => {
    must(state.witnesses.get(event.aggregateId), event);
    state.witnesses.delete(event.aggregateId);
  },
};
