/**
 * Serves a REST handler over real HTTP on 127.0.0.1 (an ephemeral port), for clients that need a
 * socket: EventSource, dropped connections. It goes through the same node:http adapter as the
 * server (server/http/node-api.ts): streamed event streams, aborted signals when the client leaves.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@/server/http/node-api';

export interface HttpServer {
  url: string;
  close(): Promise<void>;
}

export async function serveOverHttp(handler: (request: Request) => Promise<Response>): Promise<HttpServer> {
  // The production adapter (scripts/serve.mjs serves /api/v1 through it).
  const handle = toNodeHandler(handler);
  const server = http.createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
