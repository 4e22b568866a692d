/** DELETE /webhooks/{id}: Delete a webhook endpoint and its deliveries. */
import { z } from 'zod';
import { deleteEndpoint } from '@/server/domain/webhooks/endpoints';
import { answered, auth, common, endpointPath, endpointProcedure, webhookAnswer } from './shared';

export const deleteProcedure = endpointProcedure
  .meta({
    openapi: {
      ...common,
      method: 'DELETE',
      path: '/webhooks/{id}',
      summary: 'Delete a webhook endpoint',
      description: 'Nothing more is delivered to it; its deliveries are deleted with it. Recorded as webhook_endpoint.deleted.',
    },
    auth,
    errorCodes: ['not_found', 'forbidden'],
  })
  .input(endpointPath)
  .output(webhookAnswer(z.object({ id: z.uuid(), deleted: z.literal(true) }), 'WebhookEndpointDeleted'))
  .mutation(({ input, actor, write }) =>
    write(async (tx) => answered(actor.workspaceId, await deleteEndpoint(tx, actor, { id: input.id }))),
  );
