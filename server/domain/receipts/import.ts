/**
 * Importing a validated receipt document into a workspace: stored whole with its digest, one
 * `receipt.imported` ledger event carrying it. Importing the same document again changes nothing
 * (answered as a duplicate); a different document under the same receipt_id is 409.
 */
import { and, eq } from 'drizzle-orm';
import type { Tx } from '@/db';
import { importedReceipts } from '@/db/schema';
import { AppError } from '@/server/errors';
import { appendEvents } from '@/server/ledger/append';
import { digestOf } from '@/server/ledger/canonical';
import type { Actor } from '../actor';
import { importedReceiptRow } from './events';

export interface ImportOutcome {
  receipt_id: string;
  document_digest: string;
  duplicate: boolean;
  imported_at: string;
  /** `eventHash` is the name it was first served under: deprecated, `event_hash` is the rule's (docs/contract.md §10.3). */
  event: { id: string; sequence: number; event_hash: string; eventHash: string } | null;
}

export async function importReceipt(tx: Tx, actor: Actor, document: Record<string, unknown>): Promise<ImportOutcome> {
  const receiptId = String(document.receipt_id).toLowerCase();
  const documentDigest = digestOf(document);
  const now = new Date();
  const payload = { receipt_id: receiptId, document_digest: documentDigest, imported_at: now.toISOString(), document };
  const [row] = await tx
    .insert(importedReceipts)
    .values(importedReceiptRow(payload, { workspaceId: actor.workspaceId, at: now }))
    .onConflictDoNothing()
    .returning();
  if (!row) {
    const [existing] = await tx
      .select()
      .from(importedReceipts)
      .where(and(eq(importedReceipts.workspaceId, actor.workspaceId), eq(importedReceipts.receiptId, receiptId)));
    if (existing && existing.documentDigest === documentDigest) {
      return {
        receipt_id: receiptId,
        document_digest: documentDigest,
        duplicate: true,
        imported_at: existing.importedAt.toISOString(),
        event: null,
      };
    }
    throw new AppError('receipt_conflict', 'Another document with this receipt_id was already imported.', { receipt_id: receiptId });
  }
  const [event] = await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'receipt',
        aggregateId: receiptId,
        eventType: 'receipt.imported',
        payload,
      },
    ],
    now,
  );
  return {
    receipt_id: receiptId,
    document_digest: documentDigest,
    duplicate: false,
    imported_at: now.toISOString(),
    event: { id: event!.id, sequence: event!.sequence, event_hash: event!.eventHash, eventHash: event!.eventHash },
  };
}
