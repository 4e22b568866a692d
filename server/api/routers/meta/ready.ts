/** GET /ready: readiness, whether this instance should get traffic. */
import { z } from 'zod';
import { AppError } from '@/server/errors';
import { isStopping } from '@/server/shutdown';
import { schemaState } from '@/server/runtime';
import { publicProcedure } from '../../trpc';

export const readyProcedure = publicProcedure
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
  });
