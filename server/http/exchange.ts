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
  /** Aborted when the client goes away before the answer is complete (ends event-stream leases). */
  readonly signal: AbortSignal;
  /**
   * The body's bytes, read at most once and counted while read: null once it passes `limit` (a
   * declared Content-Length over it is refused unread). Rejects with BodyCutOff when the client
   * stops sending before the end.
   */
  body(limit: number): Promise<Buffer | null>;
}

/** An answer: one whole body, or a stream written as it comes (the SSE form of the event stream). */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string | Buffer;
  stream?: ReadableStream<Uint8Array>;
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
