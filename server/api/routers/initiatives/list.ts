/** GET /initiatives: List initiatives. */
import { z } from 'zod';
import { taskStatuses } from '@/db/schema';
import { initiativeView } from '@/server/domain/initiatives/tree-view';
import { listInitiatives } from '@/server/domain/initiatives/list';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { initiativeSchema } from './schemas';

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/initiatives',
      tags: ['initiatives'],
      summary: 'List initiatives',
      description:
        'The workspace’s initiatives (the Inbox among them), newest first, each with its tasks counted by status; paged by cursor.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(z.strictObject({ ...pageParams }))
  .output(
    z
      .object({
        data: z.array(
          initiativeSchema.extend({
            task_counts: z
              .object(Object.fromEntries(taskStatuses.map((s) => [s, z.int()])) as Record<(typeof taskStatuses)[number], z.ZodInt>)
              .meta({ description: 'The initiative’s tasks by status.' }),
          }),
        ),
        meta: pageMeta,
      })
      .meta({ id: 'InitiativePage' }),
  )
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'initiatives', input);
    const { db, secrets } = ctx.runtime;
    const rows = await listInitiatives(db, workspaceId, { after, limit: input.limit + 1 });
    const { page, meta } = pageOf(rows, (r) => r.initiative, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return { data: page.map((r) => ({ ...initiativeView(r.initiative), task_counts: r.counts })), meta };
  });
