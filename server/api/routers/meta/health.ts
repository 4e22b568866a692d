/** GET /health: liveness, and whether a query reaches the database. */
import { z } from 'zod';
import { ping } from '@/server/runtime';
import { publicProcedure } from '../../trpc';

export const healthProcedure = publicProcedure
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
  });
