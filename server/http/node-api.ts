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
/**
 * Before an answer that did not need the whole request body (413, 401, 415 …), this much more of
 * the body is read and dropped, for up to DRAIN_MS, so that the connection closes cleanly; past
 * either bound it is cut.
 */
const DRAIN_BYTES = 8 * 1024 * 1024;
const DRAIN_MS = 5_000;

/**
 * The request body as a web stream the transport reads with its bounds. Unlike Readable.toWeb,
 * cancelling it (the bounded reader stops at the limit) does not destroy the request, and with it
 * the socket under a response not yet sent: the answer decides what happens to the connection.
 */
function bodyStream(req: IncomingMessage): { stream: ReadableStream<Uint8Array>; detach(): void } {
  // Once cancelled, closed or failed, the stream hears nothing more from the request (the rest of
  // the body may still come, and is drained by drainUnread).
  let open = true;
  let listeners: { data(chunk: Buffer): void; end(): void; error(err: Error): void } | null = null;
  const stop = () => {
    open = false;
    if (!listeners) return;
    req.off('data', listeners.data);
    req.off('end', listeners.end);
    req.off('error', listeners.error);
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        listeners = {
          data(chunk) {
            if (!open) return;
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            if ((controller.desiredSize ?? 0) <= 0) req.pause();
          },
          end() {
            if (!open) return;
            stop();
            controller.close();
          },
          error(err) {
            if (!open) return;
            stop();
            controller.error(err);
          },
        };
        req.on('data', listeners.data);
        req.on('end', listeners.end);
        req.on('error', listeners.error);
      },
      pull() {
        if (open) req.resume();
      },
      cancel() {
        stop();
        req.pause();
      },
    },
    { highWaterMark: 4 },
  );
  // The transport may stop reading without cancelling (a declared length over the limit is
  // refused unread): detaching makes sure nothing of the stream pauses the request any more.
  return { stream, detach: stop };
}

/**
 * Reads and drops the rest of a request body the answer did not need (bounded), so that the
 * connection can close cleanly after the answer: a socket closed with unread bytes in it is
 * reset, and a client still sending meets EPIPE instead of its answer. Resolves true once the body
 * has ended, false when the client left or the rest was too long or too slow (then the connection
 * is cut).
 */
function drainUnread(req: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    let drained = 0;
    const settle = (ended: boolean) => {
      clearTimeout(cut);
      req.off('data', onData);
      resolve(ended);
    };
    const cut = setTimeout(() => settle(false), DRAIN_MS);
    const onData = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > DRAIN_BYTES) settle(false);
    };
    // A client that resets while we drain is no error of ours.
    req.on('error', () => settle(false));
    req.once('close', () => settle(req.complete));
    req.once('end', () => settle(true));
    req.on('data', onData);
    req.resume();
  });
}

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
    let detachBody: (() => void) | null = null;
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
        const body = bodyStream(req);
        detachBody = body.detach;
        init.body = body.stream;
        init.duplex = 'half';
      }
    }
    const host = headers.get('host') ?? '127.0.0.1';
    const response = await handle(new Request(`http://${host}${req.url ?? '/'}`, init));

    res.statusCode = response.status;
    response.headers.forEach((value, name) => res.setHeader(name, value));
    // Answered before the body was all read: the rest is drained first, then the answer goes out
    // and this connection closes (it carries no further request).
    if (hasBody && !req.complete) {
      res.setHeader('Connection', 'close');
      detachBody?.();
      if (!(await drainUnread(req))) return void req.socket.destroy();
    }
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
