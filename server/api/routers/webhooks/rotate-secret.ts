/** POST /webhooks/{id}/rotate-secret: Rotate the signing secret (the new one is in this response only). */
import { z } from 'zod';
import { rotateSecret } from '@/server/domain/webhooks/endpoints';
import { timestamp } from '../../schemas';
import { auth, common, endpointPath, endpointProcedure, endpointSchema, secretField } from './shared';

const rotatedResponse = z
  .object({
    ok: z.literal(true),
    data: endpointSchema.extend({
      secret: secretField,
      previous_secret_expires_at: timestamp().meta({ description: 'Until then deliveries carry a signature by each secret.' }),
    }),
  })
  .meta({ id: 'WebhookSecretRotated' });

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
      return {
        ok: true as const,
        data: { ...rotated.endpoint, secret: rotated.secret, previous_secret_expires_at: rotated.previous_secret_expires_at },
      };
    }),
  );
