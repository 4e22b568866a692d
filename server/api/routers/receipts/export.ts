/**
 * GET /receipts/{receiptId}: a receipt exported as an agent-work-receipt/v0.1 document: one the
 * service recorded, built from its task and ledger events; an imported one, as it was imported.
 */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { importedReceipts } from '@/db/schema';
import { exportReceipt, receiptWorkspace } from '@/server/domain/receipts/export';
import { AppError } from '@/server/errors';
import { authenticatedProcedure, belongsTo } from '../../trpc';
import { id } from '../../schemas';

const noSuchReceipt = () => new AppError('not_found', 'No such receipt in your workspace.');

export const exportProcedure = authenticatedProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/receipts/{receiptId}',
      tags: ['receipts'],
      summary: 'Export a receipt as an agent-work-receipt/v0.1 document',
      description:
        'The document itself (not enveloped), ready to hand to anyone and to POST to /agent-work-receipts/validate: the ' +
        'receipt and its task, the actor, the task’s ledger events with their hashes, the recording event as evidence, ' +
        'the human rulings on the task’s decisions (who, when, which option, note), and ledger_proof: the newest signed ' +
        'checkpoint (GET /ledger/checkpoint’s note) with the RFC 9162 inclusion proof of the recording event in its tree ' +
        '(leaf_index, tree_size, inclusion_path in base64), absent until a checkpoint covers that event (about a second). ' +
        'An imported receipt is returned exactly as it was imported.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found'],
  })
  .input(z.strictObject({ receiptId: id() }))
  .output(z.record(z.string(), z.unknown()).meta({ description: 'An agent-work-receipt/v0.1 document (GET /agent-work-receipts/schema).' }))
  .query(async ({ ctx, input }) => {
    const { db } = ctx.runtime;
    const workspaceId = await receiptWorkspace(db, input.receiptId);
    if (workspaceId) {
      // Another workspace's receipt is as missing as one that does not exist (OWASP API1).
      if (!belongsTo(ctx.principal, workspaceId)) throw noSuchReceipt();
      const document = await exportReceipt(db, workspaceId, input.receiptId);
      if (document) return document;
    }
    // An imported receipt: its id is the document's, unique per workspace; the caller's workspaces are searched.
    const holders = await db
      .select({ workspaceId: importedReceipts.workspaceId, document: importedReceipts.document })
      .from(importedReceipts)
      .where(eq(importedReceipts.receiptId, input.receiptId));
    const mine = holders.find((h) => belongsTo(ctx.principal, h.workspaceId));
    if (!mine) throw noSuchReceipt();
    return mine.document;
  });
