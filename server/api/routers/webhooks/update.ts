/** PATCH /webhooks/{id}: Change a webhook endpoint (If-Match; ETag). */
import { z } from 'zod';
import { updateEndpoint } from '@/server/domain/webhooks/endpoints';
import { checkWebhookUrl } from '@/server/webhooks/url-policy';
import { etag, ifMatchOf, patchHeaders } from '../../versioning';
import { id, jsonBoolean } from '../../schemas';
import { answered, auth, common, description, endpointProcedure, endpointResponse, eventTypes, url } from './shared';

export const updateProcedure = endpointProcedure
  .meta({
    openapi: {
      ...common,
      method: 'PATCH',
      path: '/webhooks/{id}',
      summary: 'Change a webhook endpoint',
      description:
        'Changes the fields given. `enabled: false` stops deliveries (events keep collecting behind the cursor); ' +
        '`enabled: true` resumes a disabled endpoint at the event it stopped at, with a fresh retry window. Each ' +
        'change is a ledger event (webhook_endpoint.updated, .enabled, .disabled); a patch that changes nothing is ' +
        '200 and writes nothing. With `If-Match: "<aggregateVersion>"`, an endpoint that has moved past that version is ' +
        '412 precondition_failed and nothing changes. The response’s ETag is the new version.',
      requestHeaders: patchHeaders,
    },
    auth,
    errorCodes: ['not_found', 'forbidden', 'precondition_failed', 'invalid_idempotency_key'],
    successHeaders: { ETag: 'The endpoint’s aggregateVersion after the change, quoted.' },
  })
  .input(
    z.strictObject({
      id: id(),
      url: url.optional(),
      event_types: eventTypes.optional(),
      description: description.optional(),
      enabled: jsonBoolean().optional(),
    }),
  )
  .output(endpointResponse)
  .mutation(async ({ ctx, input, actor, write }) => {
    const ifMatch = ifMatchOf(ctx.headers);
    // Resolved before the transaction: a slow DNS answer holds no connection.
    const checked = input.url === undefined ? undefined : await checkWebhookUrl(input.url, ctx.runtime.env.WEBHOOKS_ALLOW_PRIVATE);
    const body = await write(async (tx) =>
      answered(
        actor.workspaceId,
        await updateEndpoint(tx, actor, {
          id: input.id,
          url: checked,
          eventTypes: input.event_types,
          description: input.description,
          enabled: input.enabled,
          ifMatch,
        }),
      ),
    );
    ctx.res.headers.ETag = etag(body.data.aggregateVersion);
    return body;
  });
