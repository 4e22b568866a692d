/**
 * The REST transport of a test database served over real HTTP on 127.0.0.1 (an ephemeral port),
 * through the same node:http handler scripts/serve.mjs uses (server/http/node-api.ts): every
 * integration test's request crosses a socket, on a keep-alive pool (undici).
 *
 * Requests say which address the app was opened on in their Host header, as a browser does:
 * 127.0.0.1:3000 unless a test says otherwise (the same-origin rules compare with it).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { Agent, request as send } from 'undici';
import { createRestHandler } from '@/server/api/rest';
import { nodeApiHandler } from '@/server/http/node-api';
import { createMcpHandler, isMcpPath } from '@/server/mcp/http';
import type { Runtime } from '@/server/runtime';

export interface HttpServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /**
   * Sends `request` to this server: its path and query, method, headers and body as they are, and
   * its URL's host as the Host header.
   */
  fetch(request: Request): Promise<Response>;
  /** Sends a request (Host 127.0.0.1:3000 unless `headers` name one). */
  send(
    method: string,
    path: string,
    headers: Headers,
    body?: string | Uint8Array | ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): Promise<Response>;
  close(): Promise<void>;
}

export async function serveApi(runtime: Runtime): Promise<HttpServer> {
  const rest = createRestHandler({ runtime: async () => runtime });
  const handle = nodeApiHandler(rest);
  // /mcp as scripts/serve.mjs routes it: the MCP endpoint over the same REST transport.
  const mcp = createMcpHandler({ runtime: async () => runtime, handle: rest });
  const server = http.createServer((req, res) => void (isMcpPath(req.url ?? '/') ? mcp(req, res) : handle(req, res)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const pool = new Agent({ keepAliveTimeout: 4_000 });
  const over: HttpServer['send'] = async (method, path, headers, body, signal) => {
    const sent = Object.fromEntries(headers);
    sent.host ??= '127.0.0.1:3000';
    const res = await send(`${url}${path}`, {
      method: method as 'GET',
      headers: sent,
      body: body instanceof ReadableStream ? Readable.fromWeb(body as never) : body,
      signal,
      dispatcher: pool,
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      for (const v of Array.isArray(value) ? value : [value]) if (v !== undefined) responseHeaders.append(name, v);
    }
    const bodyless = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
    if (bodyless) await res.body.dump();
    // Pulled chunk by chunk (Readable.toWeb fails on data arriving after a cancel, in Node 20).
    const chunks = res.body[Symbol.asyncIterator]();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await chunks.next().catch((err: unknown) => ({ error: err }));
        if ('error' in next) controller.error(next.error);
        else if (next.done) controller.close();
        else controller.enqueue(new Uint8Array(next.value as Buffer));
      },
      cancel() {
        res.body.destroy();
      },
    });
    return new Response(bodyless ? null : stream, { status: res.statusCode, headers: responseHeaders });
  };
  return {
    url,
    send: over,
    fetch(request) {
      const target = new URL(request.url);
      const headers = new Headers(request.headers);
      headers.set('host', target.host);
      return over(request.method, `${target.pathname}${target.search}`, headers, request.body ?? undefined, request.signal);
    },
    async close() {
      await mcp.close();
      await pool.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One request to `runtime`'s API, served for it alone: its status and whole body. */
export async function callApi(runtime: Runtime, request: Request): Promise<{ status: number; text: string; json(): any }> {
  const api = await serveApi(runtime);
  try {
    const res = await api.fetch(request);
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) };
  } finally {
    await api.close();
  }
}
