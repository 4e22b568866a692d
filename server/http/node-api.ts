/**
 * /api/v1 served straight from node:http, without Next.js's request pipeline in front.
 *
 * scripts/serve.mjs hands every /api/v1 request to `handleApiRequest` (this module, bundled by
 * scripts/build-api.mjs) and everything else to Next. The procedures, the REST transport and the
 * runtime are the same ones the Next route handler (app/api/v1/[...path]/route.ts) uses; the
 * runtime is shared through globalThis (server/runtime.ts), so both paths see one database.
 * Measured on the project machine: a trivial API route answered ~4× more requests a second this
 * way than through Next's route handler (see README, Performance).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createRestHandler } from '@/server/api/rest';
import { log } from '@/server/log';
import { getRuntime } from '@/server/runtime';

type FetchHandler = (request: Request) => Promise<Response>;

/** Bodies up to this size, with a Content-Length, are read whole before the handler runs. */
const SMALL_BODY_BYTES = 64 * 1024;

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** Adapts a fetch-style handler to node:http, streaming bodies both ways (SSE included). */
export function toNodeHandler(handle: FetchHandler) {
  return async function handleNode(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Aborted when the client goes away before the response is complete (ends SSE leases).
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    // From req.headers, not rawHeaders: scripts/serve.mjs has appended the peer to X-Forwarded-For there.
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else if (value !== undefined) headers.set(name, value);
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const init: RequestInit & { duplex?: 'half' } = { method: req.method, headers, signal: abort.signal };
    if (hasBody) {
      // A small body of declared length (every agent's JSON request) is read here in one piece: a
      // web stream over the socket costs more than the rest of a small request's parsing. Any
      // other body is streamed, and the transport's bounded reader enforces the limit either way.
      const declared = Number(req.headers['content-length']);
      if (req.headers['content-length'] !== undefined && declared <= SMALL_BODY_BYTES) {
        const bytes = await readAll(req).catch(() => null);
        // The client left while sending: nobody to answer.
        if (!bytes) return void res.destroy();
        init.body = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) as Uint8Array<ArrayBuffer>;
      } else {
        init.body = Readable.toWeb(req) as ReadableStream<Uint8Array>;
        init.duplex = 'half';
      }
    }
    const host = headers.get('host') ?? '127.0.0.1';
    const response = await handle(new Request(`http://${host}${req.url ?? '/'}`, init));

    res.statusCode = response.status;
    response.headers.forEach((value, name) => res.setHeader(name, value));
    if (!response.body || req.method === 'HEAD') {
      res.end();
      return;
    }
    // A long body (the event stream) is written as it comes and flushed per chunk.
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      res.flushHeaders();
      try {
        await pipeline(Readable.fromWeb(response.body as never), res);
      } catch (err) {
        // The client left mid-stream: nothing to answer to.
        if (!abort.signal.aborted) log('warn', 'response stream failed', { error: String(err) });
      }
      return;
    }
    // Any other answer is one JSON document, already whole: headers and body go out in one write.
    const body = Buffer.from(await response.arrayBuffer());
    res.setHeader('Content-Length', body.length);
    res.end(body);
  };
}

const handleApi = toNodeHandler(createRestHandler({ runtime: getRuntime }));

/** Serves one /api/v1 request; never throws (an unexpected failure is a bare 500). */
export async function handleApiRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    await handleApi(req, res);
  } catch (err) {
    log('error', 'api request failed outside the transport', { error: String(err) });
    if (!res.headersSent) {
      res.statusCode = 500;
      res.setHeader('Content-Type', 'application/json');
    }
    res.end();
  }
}

// What scripts/serve.mjs needs from this bundle to stop in order (server/lifecycle.ts).
export { endEventStreams } from '@/server/api/event-stream';
export { onStop } from '@/server/lifecycle';
export { boot } from '@/server/boot';
