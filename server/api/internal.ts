/**
 * The internal tRPC endpoint the human interface calls (/api/trpc), and the caller its server
 * components use. Both run the same procedures as REST, so every rule (roles, same-origin writes,
 * human-only rulings) holds whichever way a request comes in.
 */
import { randomUUID } from 'node:crypto';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { log } from '@/server/log';
import { getRuntime, type Runtime } from '@/server/runtime';
import { appRouter } from './root';
import { createCallerFactory, type ApiContext } from './trpc';
import { addressedOrigin } from '@/server/http/origin';

function contextFor(runtime: Runtime, headers: Headers, method: string, url: URL): ApiContext {
  return {
    runtime,
    transport: 'internal',
    requestId: randomUUID(),
    method,
    path: url.pathname,
    origin: addressedOrigin(headers, url, runtime.env.TRUSTED_PROXY_HOPS),
    headers,
    body: undefined,
    res: { status: undefined, headers: {} },
  };
}

/** The /api/trpc handler over a runtime (the process runtime in the app; a test database in tests). */
export function createInternalTrpcHandler(runtimeOf: () => Promise<Runtime>) {
  return async function handle(req: Request): Promise<Response> {
    const runtime = await runtimeOf();
    return fetchRequestHandler({
      endpoint: '/api/trpc',
      req,
      router: appRouter,
      createContext: () => contextFor(runtime, req.headers, req.method, new URL(req.url)),
      onError: ({ error, path }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR') log('error', 'internal tRPC error', { path, error: String(error.cause ?? error) });
      },
    });
  };
}

export const handleInternalTrpc = createInternalTrpcHandler(getRuntime);

const createCaller = createCallerFactory(appRouter);

/** A caller for server components, acting as whoever the request's cookie says. */
export async function callerFor(headers: Headers, url: URL) {
  const runtime = await getRuntime();
  return createCaller(contextFor(runtime, headers, 'GET', url));
}
