/** GET /webhooks/{id}/deliveries: List delivery attempts, newest first. */
import { z } from 'zod';
import { listDeliveries } from '@/server/domain/webhooks/endpoints';
import { listScope, pageMeta, pageOf, pageParams, readCursor } from '../../keyset';
import { id, timestamp } from '../../schemas';
import { auth, common, endpointProcedure } from './shared';

const deliverySchema = z
  .object({
    id: z.uuid(),
    event_id: z.uuid().meta({ description: 'The ledger event, also the webhook-id header.' }),
    sequence: z.int(),
    event_type: z.string(),
    attempt: z.int().meta({ description: '1 for the first attempt at this event, then +1.' }),
    succeeded: z.boolean(),
    status_code: z.int().nullable().meta({ description: 'The receiver’s HTTP status; null when it gave none.' }),
    error: z.string().nullable(),
    response_excerpt: z.string().nullable().meta({ description: 'The first 1,000 characters of the receiver’s answer.' }),
    duration_ms: z.int(),
    attempted_at: timestamp(),
    next_attempt_at: timestamp().nullable().meta({ description: 'For a failure that will be retried: when.' }),
  })
  .meta({ id: 'WebhookDelivery' });

export const deliveriesProcedure = endpointProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/webhooks/{id}/deliveries',
      summary: 'List delivery attempts',
      description: 'Every attempt at delivering an event to the endpoint, newest first, paged by cursor.',
    },
    auth,
    errorCodes: ['not_found', 'forbidden', 'invalid_cursor'],
  })
  .input(z.strictObject({ id: id(), cursor: pageParams.cursor, limit: pageParams.limit }))
  .output(z.object({ data: z.array(deliverySchema), meta: pageMeta }).meta({ id: 'WebhookDeliveryPage' }))
  .query(async ({ ctx, input, actor }) => {
    const { db, secrets } = ctx.runtime;
    const scope = listScope('webhook_deliveries', actor.workspaceId, input);
    const after = readCursor(secrets.cursor, scope, input.cursor);
    const rows = await listDeliveries(db, input.id, { after, limit: input.limit + 1 });
    const { page, meta } = pageOf(rows, (r) => r.key, {
      secret: secrets.cursor,
      scope,
      limit: input.limit,
      workspaceId: actor.workspaceId,
    });
    return { data: page.map(({ key: _key, ...view }) => view), meta };
  });
