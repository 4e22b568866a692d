/**
 * The internal tRPC endpoint the human interface calls (/api/trpc), and the caller its server
 * components use. Both run the same procedures as REST, so every rule (roles, same-origin writes,
 * human-only rulings) holds whichever way a request comes in.
 */
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { describeError, log } from '@/server/log';
import { getRuntime, type Runtime } from '@/server/runtime';
import type { HeaderReader } from '@/server/http/exchange';
import { appRouter } from './root';
import { createApiContext } from './context';
import { createCallerFactory } from './trpc';

/** The /api/trpc handler over a runtime (the process runtime in the app; a test database in tests). */
export function createInternalTrpcHandler(runtimeOf: () => Promise<Runtime>) {
  return async function handle(req: Request): Promise<Response> {
    const runtime = await runtimeOf();
    return fetchRequestHandler({
      endpoint: '/api/trpc',
      req,
      router: appRouter,
      createContext: () =>
        createApiContext(runtime, { transport: 'internal', method: req.method, url: new URL(req.url), headers: req.headers }),
      onError: ({ error, path }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR')
          log('error', 'internal tRPC error', { path, error: describeError(error.cause ?? error) });
      },
    });
  };
}

export const handleInternalTrpc = createInternalTrpcHandler(getRuntime);

const createCaller = createCallerFactory(appRouter);

/** A caller for server components, acting as whoever the request's cookie says. */
export async function callerFor(headers: HeaderReader, url: URL) {
  const runtime = await getRuntime();
  return createCaller(createApiContext(runtime, { transport: 'internal', method: 'GET', url, headers }));
}
