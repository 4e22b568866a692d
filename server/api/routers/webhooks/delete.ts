/** DELETE /webhooks/{id}: Delete a webhook endpoint and its deliveries. */
import { z } from 'zod';
import { deleteEndpoint } from '@/server/domain/webhooks/endpoints';
import { auth, common, endpointPath, endpointProcedure } from './shared';

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
  .output(
    z.object({ ok: z.literal(true), data: z.object({ id: z.uuid(), deleted: z.literal(true) }) }).meta({ id: 'WebhookEndpointDeleted' }),
  )
  .mutation(({ input, actor, write }) =>
    write(async (tx) => ({ ok: true as const, data: await deleteEndpoint(tx, actor, { id: input.id }) })),
  );
