/** GET /agent-work-receipts/schema: the receipt JSON Schema (agent-work-receipt/v0.1). */
import { z } from 'zod';
import { RECEIPT_SCHEMA } from '@/server/domain/receipts/validate';
import { publicProcedure } from '../../trpc';

export const schemaProcedure = publicProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/agent-work-receipts/schema',
      tags: ['receipts'],
      summary: 'The receipt JSON Schema (agent-work-receipt/v0.1)',
      description: 'No credential. Counted in the public validator’s per-address rate limit (see GET /agent-work-receipts/validate).',
      protect: false,
    },
    errorCodes: ['rate_limited'],
    limitedPerAddress: true,
  })
  .input(z.strictObject({}))
  .output(z.record(z.string(), z.unknown()))
  .query(() => RECEIPT_SCHEMA);
