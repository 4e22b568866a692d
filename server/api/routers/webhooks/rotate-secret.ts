/** POST /webhooks/{id}/rotate-secret: Rotate the signing secret (the new one is in this response only). */
import { rotateSecret } from '@/server/domain/webhooks/endpoints';
import { timestamp } from '../../schemas';
import { answered, auth, common, endpointPath, endpointProcedure, endpointSchema, secretField, webhookAnswer } from './shared';

const rotatedResponse = webhookAnswer(
  endpointSchema.extend({
    secret: secretField,
    previous_secret_expires_at: timestamp().meta({ description: 'Until then deliveries carry a signature by each secret.' }),
  }),
  'WebhookSecretRotated',
);

export const rotateSecretProcedure = endpointProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/webhooks/{id}/rotate-secret',
      summary: 'Rotate the signing secret',
      description:
        'A new secret, in this response only. For 24 hours deliveries are signed with both (two `v1,` signatures ' +
        'in webhook-signature), so a receiver can switch without missing one. Recorded as ' +
        'webhook_endpoint.secret_rotated (without either secret).',
    },
    auth,
    errorCodes: ['not_found', 'forbidden'],
  })
  .input(endpointPath)
  .output(rotatedResponse)
  .mutation(({ ctx, input, actor, write }) =>
    write(async (tx) => {
      const rotated = await rotateSecret(tx, actor, { id: input.id }, ctx.runtime.secrets.webhook);
      return answered(actor.workspaceId, {
        ...rotated.endpoint,
        secret: rotated.secret,
        previous_secret_expires_at: rotated.previous_secret_expires_at,
      });
    }),
  );
