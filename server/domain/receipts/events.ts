/**
 * The imported receipts' slice of the event registry: a receipt document imported whole (POST
 * /agent-work-receipts/import), and the one `importedReceiptRow(payload)` that makes its row on
 * the write (import.ts) and on the replay.
 */
import { z } from 'zod';
import type { importedReceipts } from '@/db/schema';
import { readBack, type PayloadOf } from '@/server/ledger/event-types';
import { metaOf, type RowMeta, type RulesOf } from '../projection';

type ImportedReceiptRow = typeof importedReceipts.$inferSelect;

export const receiptEvents = {
  'receipt.imported': readBack(
    'receipt',
    z.object({
      receipt_id: z.string(),
      document_digest: z.string(),
      imported_at: z.string(),
      document: z.record(z.string(), z.unknown()),
    }),
  ),
};

/** The row of an imported receipt: imported when its event was appended. */
export const importedReceiptRow = (p: PayloadOf<'receipt.imported'>, m: Omit<RowMeta, 'version'>): ImportedReceiptRow => ({
  workspaceId: m.workspaceId,
  receiptId: p.receipt_id,
  document: p.document,
  documentDigest: p.document_digest,
  importedAt: m.at,
});

export const receiptRules: RulesOf<typeof receiptEvents> = {
  'receipt.imported': (state, event) => state.imported.set(event.aggregateId, importedReceiptRow(event.payload, metaOf(event))),
};
