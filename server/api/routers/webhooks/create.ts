/** POST /webhooks: Create a webhook endpoint (its signing secret is in this response only). */
import { z } from 'zod';
import { createEndpoint, MAX_ENDPOINTS_PER_WORKSPACE } from '@/server/domain/webhooks/endpoints';
import { checkWebhookUrl } from '@/server/webhooks/url-policy';
import { ownerProcedure } from '../../procedures';
import { id } from '../../schemas';
import { answered, auth, common, description, endpointSchema, eventTypes, secretField, url, webhookAnswer } from './shared';

const createdResponse = webhookAnswer(endpointSchema.extend({ secret: secretField }), 'WebhookEndpointCreated');

export const createProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/webhooks',
      summary: 'Create a webhook endpoint',
      description:
        'Events of the subscribed types that the ledger records from now on are POSTed to `url`, one event per ' +
        'request, in sequence order, at least once, exactly as GET /events/stream serves them, signed per the ' +
        'Standard Webhooks specification (headers webhook-id = the event id, webhook-timestamp, webhook-signature). ' +
        'A 2xx answer within 10 s delivers it; anything else is retried with exponential backoff and jitter for 24 ' +
        'hours, after which the endpoint is disabled (`webhook_endpoint.disabled`). The secret is in this response ' +
        `only. A workspace has at most ${MAX_ENDPOINTS_PER_WORKSPACE} endpoints. An Idempotency-Key is checked ` +
        'but not replayed: the response holds the secret, which is never stored in the clear; list the endpoints to ' +
        'find one whose creation’s answer was lost.',
    },
    auth,
    successStatus: 201,
    errorCodes: ['forbidden', 'conflict', 'invalid_idempotency_key'],
  })
  .input(
    z.strictObject({
      workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace); a human’s default is their first.' }),
      url,
      event_types: eventTypes.default(['*']),
      description: description.default(''),
    }),
  )
  .output(createdResponse)
  .mutation(async ({ ctx, input, actor, write }) => {
    const { env, secrets } = ctx.runtime;
    // Resolved before the transaction: a slow DNS answer holds no connection.
    const checked = await checkWebhookUrl(input.url, env.WEBHOOKS_ALLOW_PRIVATE);
    return write(async (tx) => {
      const { endpoint, secret } = await createEndpoint(
        tx,
        actor,
        { url: checked, eventTypes: input.event_types, description: input.description },
        secrets.webhook,
      );
      return answered(actor.workspaceId, { ...endpoint, secret });
    });
  });
