/** Public documentation routes: the error codes, the OpenAPI document, and a health check. */
import { z } from 'zod';
import { AppError, errorCodes, errorTable, isErrorCode, type ErrorCode } from '@/server/errors';
import { isStopping } from '@/server/shutdown';
import { ping, schemaState } from '@/server/runtime';
import { publicProcedure, router } from '../trpc';

const errorDoc = z
  .object({
    code: z.string(),
    status: z.int(),
    meaning: z.string(),
    action: z.string(),
    retryAfter: z.int().meta({ description: 'Seconds a client should wait before retrying; 0 when retrying will not help.' }),
  })
  .meta({ id: 'ErrorCodeDoc' });

function docOf(code: ErrorCode) {
  const spec = errorTable[code];
  return { code, status: spec.status, meaning: spec.meaning, action: spec.action, retryAfter: 'retryAfter' in spec ? spec.retryAfter : 0 };
}

export const metaRouter = router({
  errors: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/errors',
        tags: ['meta'],
        summary: 'Document the error codes',
        description: 'With `code`: that code’s status, meaning and what to do. Without: every code. No credential needed.',
        protect: false,
      },
      errorCodes: ['not_found'],
    })
    .input(z.strictObject({ code: z.string().max(100).optional() }))
    .output(z.object({ data: z.array(errorDoc), meta: z.object({ apiVersion: z.literal('1'), count: z.int() }) }))
    .query(({ input }) => {
      if (input.code !== undefined && !isErrorCode(input.code)) {
        throw new AppError('not_found', `No error code ${JSON.stringify(input.code)}. Call GET /api/v1/errors for the list.`);
      }
      const data = input.code !== undefined ? [docOf(input.code as ErrorCode)] : errorCodes.map(docOf);
      return { data, meta: { apiVersion: '1' as const, count: data.length } };
    }),

  openapi: publicProcedure
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
      const { openApiDocument } = await import('../openapi');
      return openApiDocument(ctx.runtime.env.APP_URL) as unknown as Record<string, unknown>;
    }),

  health: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/health',
        tags: ['meta'],
        summary: 'Liveness and database reachability',
        description:
          'Answers 200 with the database engine once a query has reached the database, 503 `service_unavailable` ' +
          'when it cannot. No credential needed: for load balancers and uptime checks.',
        protect: false,
      },
    })
    .input(z.strictObject({}))
    .output(z.object({ status: z.literal('ok'), engine: z.enum(['postgres', 'pglite']) }))
    .query(async ({ ctx }) => {
      await ping(ctx.runtime.db);
      return { status: 'ok' as const, engine: ctx.runtime.engine };
    }),

  ready: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/ready',
        tags: ['meta'],
        summary: 'Readiness: whether this instance should get traffic',
        description:
          'For load balancers and orchestrators (a readiness probe; GET /health is the liveness one). 200 while this ' +
          'instance can serve; 503 `service_unavailable` while its database cannot be reached, while the database lacks ' +
          'a migration this instance ships (another instance is still migrating it), and from the moment the instance ' +
          'begins to stop (SIGTERM): it goes on serving what it is sent for DRAIN_DELAY_MS, so that the balancer has ' +
          'seen the 503 and stopped sending before it closes. No credential needed.',
        protect: false,
      },
    })
    .input(z.strictObject({}))
    .output(z.object({ status: z.literal('ready'), engine: z.enum(['postgres', 'pglite']), migration: z.string() }))
    .query(async ({ ctx }) => {
      if (isStopping()) throw new AppError('service_unavailable', 'This instance is stopping: send requests to another one.');
      const schema = await schemaState(ctx.runtime.db);
      if (!schema.current) {
        throw new AppError('service_unavailable', `The database schema is behind this instance (it ships ${schema.newest}).`);
      }
      return { status: 'ready' as const, engine: ctx.runtime.engine, migration: schema.newest };
    }),
});
