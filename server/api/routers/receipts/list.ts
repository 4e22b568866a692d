/** GET /receipts: List receipts, newest first, optionally of one task. */
import { z } from 'zod';
import { listReceipts } from '@/server/domain/receipts/list';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { id, timestamp } from '../../schemas';

const receiptSummary = z
  .object({
    id: z.uuid(),
    task_id: z.uuid(),
    status: z.string(),
    summary: z.string(),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'ReceiptSummary' });

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/receipts',
      tags: ['receipts'],
      summary: 'List receipts',
      description:
        'The receipts of the workspace’s tasks, newest first, optionally of one task, paged by cursor. GET /receipts/{id} ' +
        'exports one as a document. Imported receipts are read by their id.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(
    z.strictObject({
      task_id: id().optional(),
      ...pageParams,
    }),
  )
  .output(z.object({ data: z.array(receiptSummary), meta: pageMeta }).meta({ id: 'ReceiptPage' }))
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'receipts', input);
    const { db, secrets } = ctx.runtime;
    const rows = await listReceipts(db, workspaceId, {
      taskId: input.task_id,
      after,
      limit: input.limit + 1,
    });
    const { page, meta } = pageOf(rows, (r) => r, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return {
      data: page.map((r) => ({
        id: r.id,
        task_id: r.taskId,
        status: r.status,
        summary: r.summary,
        created_at: r.createdAt.toISOString(),
        updated_at: r.updatedAt.toISOString(),
      })),
      meta,
    };
  });
