/** POST /webhooks/{id}/test: Send a test delivery (a webhook_endpoint.test event for this endpoint only). */
import { z } from 'zod';
import { requestTest } from '@/server/domain/webhooks/endpoints';
import { answered, auth, common, endpointPath, endpointProcedure, webhookAnswer } from './shared';

export const testProcedure = endpointProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/webhooks/{id}/test',
      summary: 'Send a test delivery',
      description:
        'Records a `webhook_endpoint.test` event, which this endpoint receives whatever its event_types, in sequence ' +
        'order behind what is already waiting; no other endpoint receives it. Answers 202 with the ' +
        'event; the attempt shows in GET /webhooks/{id}/deliveries.',
    },
    auth,
    successStatus: 202,
    errorCodes: ['not_found', 'forbidden'],
  })
  .input(endpointPath)
  .output(webhookAnswer(z.object({ event_id: z.uuid(), sequence: z.int() }), 'WebhookTestRequested'))
  .mutation(({ input, actor, write }) => write(async (tx) => answered(actor.workspaceId, await requestTest(tx, actor, { id: input.id }))));
