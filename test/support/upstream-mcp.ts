/**
 * A real upstream MCP server for the gateway's tests: the SDK's own Server over its Streamable
 * HTTP transport on 127.0.0.1, one Server per session as the SDK asks, recording every tool call
 * it receives (the arguments exactly as they arrived, and the request's headers). Its tools can be
 * changed while it runs (each session is sent notifications/tools/list_changed), and it can be
 * told to answer every request with bytes that are not the protocol, or with a result of any size.
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface UpstreamToolSpec {
  description?: string;
  inputSchema?: Record<string, unknown>;
  /** The tool's answer; by default its arguments echoed back as text. */
  run?: (args: Record<string, unknown>) => CallToolResult | Promise<CallToolResult>;
}

interface ReceivedCall {
  tool: string;
  arguments: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  at: number;
}

export interface Upstream {
  /** The Streamable HTTP endpoint, http://127.0.0.1:<port>/mcp. */
  url: string;
  /** Every tools/call received, in order. */
  calls: ReceivedCall[];
  /** Every HTTP request received (its method and headers), in order. */
  requests: { method: string; headers: IncomingHttpHeaders }[];
  /** Adds or replaces a tool and tells every session its tools changed. */
  setTool(name: string, spec: UpstreamToolSpec): Promise<void>;
  /** Removes a tool and tells every session. */
  removeTool(name: string): Promise<void>;
  /** Forgets every session, as an upstream that restarted has: the next request of one is answered 404. */
  dropSessions(): Promise<void>;
  /** `garbage`: every request is answered 200 with bytes that are no JSON-RPC; `ok` again to recover. */
  behave(mode: 'ok' | 'garbage'): void;
  close(): Promise<void>;
}

/** The tools of the tests' "bank": one to allow, one to put to a human, one to deny. */
export const BANK_TOOLS: Record<string, UpstreamToolSpec> = {
  echo: { description: 'Says it back.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  transfer: {
    description: 'Moves money.',
    inputSchema: { type: 'object', properties: { to: { type: 'string' }, amount: { type: 'number' } }, required: ['to', 'amount'] },
  },
  wipe: { description: 'Deletes everything.' },
};

/** The bank's guards: echo allowed, wipe denied; transfer, named by none, takes the default mode (ask). */
export const BANK_GUARDS = [
  { tool: 'echo', mode: 'allow' },
  { tool: 'wipe', mode: 'deny' },
] as const;

const OBJECT_SCHEMA = { type: 'object', properties: {}, additionalProperties: true };

export async function startUpstream(
  tools: Record<string, UpstreamToolSpec> = {},
  opts: { requireHeaders?: Record<string, string> } = {},
): Promise<Upstream> {
  const specs = new Map(Object.entries(tools));
  const calls: ReceivedCall[] = [];
  const requests: Upstream['requests'] = [];
  const sessions = new Map<string, { server: Server; transport: StreamableHTTPServerTransport }>();
  let mode: 'ok' | 'garbage' = 'ok';
  let current: IncomingHttpHeaders = {};

  function serverFor(): Server {
    const server = new Server({ name: 'test-upstream', version: '1' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [...specs].map(([name, spec]) => ({
        name,
        description: spec.description ?? `The ${name} tool.`,
        inputSchema: spec.inputSchema ?? OBJECT_SCHEMA,
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const args = (request.params.arguments ?? {}) as Record<string, unknown>;
      calls.push({ tool: request.params.name, arguments: args, headers: current, at: Date.now() });
      const spec = specs.get(request.params.name);
      if (!spec) return { content: [{ type: 'text', text: `No tool ${request.params.name}.` }], isError: true };
      if (spec.run) return spec.run(args);
      return { content: [{ type: 'text', text: JSON.stringify(args) }] };
    });
    return server;
  }

  const http1 = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', headers: req.headers });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        if (mode === 'garbage') {
          res.writeHead(200, { 'Content-Type': 'application/json' }).end('<html>not json-rpc</html>');
          return;
        }
        for (const [name, value] of Object.entries(opts.requireHeaders ?? {})) {
          if (req.headers[name.toLowerCase()] !== value) {
            res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"unauthorized"}');
            return;
          }
        }
        const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
        const id = req.headers['mcp-session-id'];
        let session = typeof id === 'string' ? sessions.get(id) : undefined;
        if (!session) {
          if (typeof id === 'string') {
            res
              .writeHead(404, { 'Content-Type': 'application/json' })
              .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
            return;
          }
          const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (sid) => void sessions.set(sid, { server, transport }),
          });
          transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
          };
          const server = serverFor();
          await server.connect(transport);
          session = { server, transport };
        }
        current = req.headers;
        await session.transport.handleRequest(req, res, body);
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
    });
  });
  await new Promise<void>((resolve) => http1.listen(0, '127.0.0.1', resolve));
  const { port } = http1.address() as AddressInfo;

  const changed = async () => {
    for (const { server } of sessions.values()) await server.sendToolListChanged().catch(() => undefined);
  };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    requests,
    async setTool(name, spec) {
      specs.set(name, spec);
      await changed();
    },
    async removeTool(name) {
      specs.delete(name);
      await changed();
    },
    async dropSessions() {
      const held = [...sessions.values()];
      sessions.clear();
      for (const { transport } of held) await transport.close().catch(() => undefined);
    },
    behave(next) {
      mode = next;
    },
    async close() {
      for (const { transport } of sessions.values()) await transport.close().catch(() => undefined);
      http1.closeAllConnections();
      await new Promise<void>((resolve) => http1.close(() => resolve()));
    },
  };
}
