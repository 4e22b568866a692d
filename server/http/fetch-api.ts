/**
 * /api/v1 as a fetch handler, for `next dev` only (app/api/v1/[...path]/route.ts): in production
 * scripts/serve.mjs serves the API from node:http (server/http/node-api.ts) and never comes here.
 * Its bounded reader also serves /api/trpc (server/api/internal.ts).
 */
import { BodyCutOff, webStreamOf, type Answer, type ApiRequest } from './exchange';

/** The body's bytes, counted while read (see ApiRequest.body). */
export async function readBounded(request: Request, limit: number): Promise<Buffer | null> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read().catch((err: unknown) => {
        throw new BodyCutOff(err);
      });
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        return null;
      }
      chunks.push(value);
    }
  }
  return Buffer.concat(chunks);
}

export function fetchApiHandler(handle: (request: ApiRequest) => Promise<Answer>) {
  return async function handleFetch(request: Request): Promise<Response> {
    const answer = await handle({
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      body: (limit) => readBounded(request, limit),
    });
    const bodyless = request.method === 'HEAD' || answer.status === 204 || answer.status === 304;
    const body = answer.stream
      ? webStreamOf(answer.stream)
      : typeof answer.body === 'string'
        ? answer.body
        : new Uint8Array(answer.body ?? []);
    return new Response(bodyless ? null : body, { status: answer.status, headers: answer.headers });
  };
}
