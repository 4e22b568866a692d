/**
 * What the API transport needs of an HTTP request, and what it answers: a small view of the
 * request that node:http (server/http/node-api.ts) and Next's dev route (server/http/fetch-api.ts)
 * each give in a few lines, so the transport (server/api/rest.ts) works on neither's objects and
 * production converts nothing (no fetch Request or Response on the way).
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Reads request headers by lower-case name; a fetch `Headers` is one too. */
export interface HeaderReader {
  get(name: string): string | null;
}

/** node:http's header object as a HeaderReader (repeated headers joined as fetch joins them). */
export function nodeHeaders(headers: IncomingHttpHeaders): HeaderReader {
  return {
    get(name) {
      const value = headers[name];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}

export interface ApiRequest {
  method: string;
  /** The request target, parsed once (its origin is the addressed host, or 127.0.0.1). */
  url: URL;
  headers: HeaderReader;
  /**
   * The body's bytes, read at most once and counted while read: null once it passes `limit` (a
   * declared Content-Length over it is refused unread). Rejects with BodyCutOff when the client
   * stops sending before the end.
   */
  body(limit: number): Promise<Buffer | null>;
}

/** Where a pushed body writes its chunks: the node response itself, or a web stream's controller. */
export interface ChunkSink {
  /**
   * Writes a chunk. False when the client is behind (more waits to be sent than the connection
   * buffers): the writer stops until `drained`, rather than piling up what the client cannot take.
   */
  write(chunk: Uint8Array): boolean;
  /** Calls `then` once, when the client has taken what was waiting (after a write answered false). */
  drained(then: () => void): void;
  end(): void;
}

/**
 * A body written as it comes (the SSE form of the event stream): started once with where to write,
 * cancelled when the client leaves. Pushed straight into the node response: a web ReadableStream
 * and its reader between the two cost more than the rest of an idle lease, and ten thousand may be
 * open at once (docs/performance.md).
 */
export interface PushedBody {
  start(sink: ChunkSink): void;
  cancel(): void;
}

/** An answer: one whole body, or a body pushed as it comes. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string | Buffer;
  stream?: PushedBody;
}

/** Ends a pushed body nobody will read (started, so it releases what it holds, and cancelled at once). */
export function discard(body: PushedBody): void {
  body.start({ write: () => true, drained() {}, end() {} });
  body.cancel();
}

/** A pushed body as a web stream (fetch handlers: Next's dev route). */
export function webStreamOf(body: PushedBody): ReadableStream<Uint8Array> {
  let open = true;
  let onPull: (() => void) | null = null;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        body.start({
          write: (chunk) => {
            if (!open) return true;
            controller.enqueue(chunk);
            return (controller.desiredSize ?? 1) > 0;
          },
          drained: (then) => (onPull = then),
          end: () => {
            if (!open) return;
            open = false;
            controller.close();
          },
        });
      },
      // The reader wants more: a writer that was told to stop goes on.
      pull() {
        const then = onPull;
        onPull = null;
        then?.();
      },
      cancel() {
        open = false;
        body.cancel();
      },
    },
    { highWaterMark: 16 },
  );
}

/** The client stopped sending before the body's end (it left, or its connection broke). */
export class BodyCutOff extends Error {
  constructor(cause: unknown) {
    super('The request body was cut off before its end.', { cause });
  }
}

export const jsonAnswer = (status: number, body: unknown, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { ...headers, 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});
