/**
 * The internal tRPC endpoint the human interface calls (/api/trpc), and the caller its server
 * components use. Both run the same procedures as REST, so every rule (roles, same-origin writes,
 * human-only rulings) holds whichever way a request comes in.
 */
import { randomUUID } from 'node:crypto';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { AppError } from '@/server/errors';
import { BodyCutOff } from '@/server/http/exchange';
import { readBounded } from '@/server/http/fetch-api';
import { describeError, log } from '@/server/log';
import { getRuntime, type Runtime } from '@/server/runtime';
import type { HeaderReader } from '@/server/http/exchange';
import { appRouter } from './root';
import { createApiContext } from './context';
import { errorAnswer } from './rest';
import { createCallerFactory } from './trpc';

/** No call of the interface sends more; scripts/serve.mjs holds every body for Next to the same. */
const INTERNAL_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The request with its body read under the limit, or the answer when it is over (413) or cut off
 * (400). tRPC's adapter reads a body whole; in production scripts/serve.mjs has bounded it already,
 * and this holds the limit wherever else the handler is called (`next dev`, tests).
 */
async function bounded(req: Request, appUrl: string): Promise<Request | Response> {
  if (req.method === 'GET' || req.method === 'HEAD' || req.body === null) return req;
  let bytes: Buffer | null;
  try {
    bytes = await readBounded(req, INTERNAL_BODY_LIMIT_BYTES);
  } catch (err) {
    if (!(err instanceof BodyCutOff)) throw err;
    return refusal(new AppError('invalid_json', err.message), appUrl);
  }
  if (bytes === null) {
    const limit = INTERNAL_BODY_LIMIT_BYTES;
    return refusal(new AppError('payload_too_large', `The body is larger than ${limit} bytes.`, { limitBytes: limit }), appUrl);
  }
  return new Request(req.url, { method: req.method, headers: req.headers, body: new Uint8Array(bytes), signal: req.signal });
}

function refusal(error: AppError, appUrl: string): Response {
  const answer = errorAnswer(randomUUID(), error, appUrl);
  return new Response(answer.body as string, { status: answer.status, headers: answer.headers });
}

/** The /api/trpc handler over a runtime (the process runtime in the app; a test database in tests). */
export function createInternalTrpcHandler(runtimeOf: () => Promise<Runtime>) {
  return async function handle(original: Request): Promise<Response> {
    const runtime = await runtimeOf();
    const req = await bounded(original, runtime.env.APP_URL);
    if (req instanceof Response) return req;
    return fetchRequestHandler({
      endpoint: '/api/trpc',
      req,
      router: appRouter,
      createContext: () =>
        createApiContext(runtime, { transport: 'internal', method: req.method, url: new URL(req.url), headers: req.headers }),
      // A 429 or 503 says when to retry in Retry-After too, as every other door does.
      responseMeta: ({ errors }) => {
        const retry = errors.map((e) => e.cause).find((c): c is AppError => c instanceof AppError && c.retryAfter > 0);
        return retry ? { headers: { ...retry.extras.headers, 'Retry-After': String(retry.retryAfter) } } : {};
      },
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
