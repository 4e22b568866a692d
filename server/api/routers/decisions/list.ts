/** GET /decisions: List decisions. */
import { z } from 'zod';
import { decisionStatuses, decisionUrgencies } from '@/db/schema';
import { listDecisions } from '@/server/domain/decisions/list';
import { sweepDecisionTimeouts } from '@/server/domain/decisions/timeouts';
import { decisionViews } from '@/server/domain/decisions/view';
import { signingOf } from '@/server/runtime';
import { listScope, pageOf, readCursor } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { apiMeta, id, pageLimit } from '../../schemas';
import { decisionSchema } from './schemas';

const listQuery = z.strictObject({
  workspace_id: id()
    .optional()
    .meta({ description: 'Optional for an API key (its workspace); a signed-in human’s default is their first workspace.' }),
  status: z.array(z.enum(decisionStatuses)).max(5).optional().meta({ description: 'Repeatable.' }),
  urgency: z.array(z.enum(decisionUrgencies)).max(4).optional().meta({ description: 'Repeatable.' }),
  cursor: z.string().max(512).meta({ description: 'meta.nextCursor of the previous page, with the same filters.' }).optional(),
  limit: pageLimit(),
});

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
    // Signed for the workspace and the filters, as every list's is (docs/contract.md §8.1): a cursor
    // sent back with other filters is refused, not read as a place in another listing.
    const scope = listScope('decisions', workspaceId, input);
    const after = readCursor(secrets.cursor, scope, input.cursor);
    await sweepDecisionTimeouts(db, { workspaceId });
    const rows = await listDecisions(db, workspaceId, { status: input.status, urgency: input.urgency, after, limit: input.limit + 1 });
    const { page, meta } = pageOf(rows, (r) => r, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return { data: await decisionViews(db, workspaceId, page, signingOf(ctx.runtime), actor), meta };
  });
