/** GET /decisions: List decisions. */
import { z } from 'zod';
import { decisionStatuses, decisionUrgencies } from '@/db/schema';
import { listDecisions } from '@/server/domain/decisions/list';
import { sweepDecisionTimeouts } from '@/server/domain/decisions/timeouts';
import { decisionViews } from '@/server/domain/decisions/view';
import { AppError } from '@/server/errors';
import { decodeKeysetCursor, encodeKeysetCursor } from '@/server/ledger/cursor';
import { memberProcedure } from '../../procedures';
import { apiMeta, id } from '../../schemas';
import { decisionSchema } from './schemas';

const listQuery = z.strictObject({
  workspace_id: id()
    .optional()
    .meta({ description: 'Optional for an API key (its workspace); a signed-in human’s default is their first workspace.' }),
  status: z.array(z.enum(decisionStatuses)).max(5).optional().meta({ description: 'Repeatable.' }),
  urgency: z.array(z.enum(decisionUrgencies)).max(4).optional().meta({ description: 'Repeatable.' }),
  cursor: z.string().max(512).meta({ description: 'meta.nextCursor of the previous page.' }).optional(),
  limit: z.coerce.number().int().min(1).max(100).meta({ description: '1 to 100, default 50.' }).default(50),
});

const listScope = (workspaceId: string) => `decisions|${workspaceId}`;

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/decisions',
      tags: ['decisions'],
      summary: 'List decisions',
      description: 'Newest first, filtered by status and urgency, paged by cursor.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(listQuery)
  .output(
    z
      .object({
        data: z.array(decisionSchema),
        meta: apiMeta.extend({ nextCursor: z.string().nullable(), hasMore: z.boolean(), limit: z.int() }),
      })
      .meta({ id: 'DecisionPage' }),
  )
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { db, secrets } = ctx.runtime;
    let after: { createdAt: Date; id: string } | undefined;
    if (input.cursor !== undefined) {
      const values = decodeKeysetCursor(secrets.cursor, listScope(workspaceId), input.cursor, 2);
      if (!values) throw new AppError('invalid_cursor', 'This cursor was not issued for this list in your workspace.');
      after = { createdAt: new Date(values[0]!), id: values[1]! };
    }
    await sweepDecisionTimeouts(db, { workspaceId, onCommitted: (id) => ctx.runtime.wakeups.committed(id) });
    const rows = await listDecisions(db, workspaceId, { status: input.status, urgency: input.urgency, after, limit: input.limit + 1 });
    const hasMore = rows.length > input.limit;
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    return {
      data: await decisionViews(db, workspaceId, page),
      meta: {
        apiVersion: '1' as const,
        workspaceId,
        nextCursor:
          hasMore && last ? encodeKeysetCursor(secrets.cursor, listScope(workspaceId), [last.createdAt.toISOString(), last.id]) : null,
        hasMore,
        limit: input.limit,
      },
    };
  });
