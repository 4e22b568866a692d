/** GET /openapi.json: the OpenAPI 3.1 document of this API, as this server serves it. */
import { z } from 'zod';
import { publicProcedure } from '../../trpc';

export const openapiProcedure = publicProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/openapi.json',
      tags: ['meta'],
      summary: 'The OpenAPI 3.1 document of this API',
      description:
        'This document, as the server serves it: what `clients/typescript` is generated from. Its `servers` entry is ' +
        'the address of the service that served it. No credential needed.',
      protect: false,
    },
  })
  .input(z.strictObject({}))
  .output(z.record(z.string(), z.unknown()))
  .query(async ({ ctx }) => {
    // Imported here: the document is generated from the router that contains this procedure.
    const { openApiDocument } = await import('../../openapi');
    return openApiDocument(ctx.runtime.env.APP_URL) as unknown as Record<string, unknown>;
  });
