/** GET /webhooks/{id}: Read a webhook endpoint (never its secret), with its version as the ETag. */
import { getEndpoint } from '@/server/domain/webhooks/endpoints';
import { etag } from '../../versioning';
import { answered, auth, common, endpointPath, endpointProcedure, endpointResponse } from './shared';

export const getProcedure = endpointProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/webhooks/{id}',
      summary: 'Read a webhook endpoint',
      description: 'The endpoint (never its secret) with an ETag of its version, for a conditional PATCH.',
    },
    auth,
    errorCodes: ['not_found', 'forbidden'],
    successHeaders: { ETag: 'The endpoint’s aggregateVersion, quoted: send it back as If-Match on PATCH.' },
  })
  .input(endpointPath)
  .output(endpointResponse)
  .query(async ({ ctx, input, actor }) => {
    const endpoint = await getEndpoint(ctx.runtime.db, actor.workspaceId, input.id);
    ctx.res.headers.ETag = etag(endpoint.aggregateVersion);
    return answered(actor.workspaceId, endpoint);
  });
