/** GET /webhooks: List webhook endpoints. */
import { z } from 'zod';
import { listEndpoints } from '@/server/domain/webhooks/endpoints';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { ownerProcedure } from '../../procedures';
import { auth, common, endpointSchema } from './shared';

export const listProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/webhooks',
      summary: 'List webhook endpoints',
      description: 'Newest first, paged by cursor.',
    },
    auth,
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(z.strictObject({ ...pageParams }))
  .output(z.object({ data: z.array(endpointSchema), meta: pageMeta }).meta({ id: 'WebhookEndpointList' }))
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'webhooks', input);
    const { db, secrets } = ctx.runtime;
    const rows = await listEndpoints(db, workspaceId, { after, limit: input.limit + 1 });
    const { page, meta } = pageOf(rows, (r) => r.key, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return { data: page.map(({ key: _key, ...view }) => view), meta };
  });
