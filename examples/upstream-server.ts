/**
 * An MCP server to put behind the service's gateway: a small bank with three tools, written with
 * the MCP SDK as any tool server is. It knows nothing of the service: it checks its own bearer
 * token, which only the service holds once the server is registered there (POST /mcp-servers with
 * `headers`), so an agent can reach these tools only through /mcp, under the server's guards.
 *
 *   UPSTREAM_TOKEN=s3cret npx tsx examples/upstream-server.ts      # listens on 127.0.0.1:3900
 *
 * Environment: UPSTREAM_TOKEN (required: the bearer token it accepts), PORT (default 3900). It
 * prints one line when it listens ("listening on http://127.0.0.1:<port>/mcp") and one line for
 * every tool call it runs, with its arguments: what the gateway sent it, and nothing else.
 *
 * The tools: `balance` (reads an account), `transfer` (moves money: the one to put to a human),
 * `close_account` (nobody should call it through an agent: deny it).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const token = process.env.UPSTREAM_TOKEN;
if (!token) {
  console.error('Set UPSTREAM_TOKEN: the bearer token this server accepts (give the same to the service when you register it).');
  process.exit(1);
}
const port = Number(process.env.PORT ?? 3900);
/** The largest request body it reads (a tool call's arguments). */
const BODY_LIMIT_BYTES = 1024 * 1024;

const accounts = new Map<string, number>([
  ['alice', 1_000],
  ['bob', 250],
]);

/** One McpServer per session, as the SDK asks; the accounts are the process's. */
function bank(): McpServer {
  const server = new McpServer({ name: 'example-bank', version: '1' });
  server.registerTool(
    'balance',
    { description: 'The balance of an account.', inputSchema: { account: z.string() }, annotations: { readOnlyHint: true } },
    ({ account }) => {
      console.log(`balance ${JSON.stringify({ account })}`);
      const balance = accounts.get(account);
      if (balance === undefined) return { content: [{ type: 'text', text: `No account ${account}.` }], isError: true };
      return { content: [{ type: 'text', text: `${account}: ${balance}` }], structuredContent: { account, balance } };
    },
  );
  server.registerTool(
    'transfer',
    {
      description: 'Moves an amount from one account to another.',
      inputSchema: { from: z.string(), to: z.string(), amount: z.number().positive() },
      annotations: { destructiveHint: true },
    },
    ({ from, to, amount }) => {
      console.log(`transfer ${JSON.stringify({ from, to, amount })}`);
      const available = accounts.get(from) ?? 0;
      if (available < amount) return { content: [{ type: 'text', text: `${from} has only ${available}.` }], isError: true };
      accounts.set(from, available - amount);
      accounts.set(to, (accounts.get(to) ?? 0) + amount);
      return { content: [{ type: 'text', text: `Moved ${amount} from ${from} to ${to}.` }], structuredContent: { from, to, amount } };
    },
  );
  server.registerTool(
    'close_account',
    { description: 'Closes an account for good.', inputSchema: { account: z.string() }, annotations: { destructiveHint: true } },
    ({ account }) => {
      console.log(`close_account ${JSON.stringify({ account })}`);
      accounts.delete(account);
      return { content: [{ type: 'text', text: `Closed ${account}.` }] };
    },
  );
  return server;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();

const listener = http.createServer((req, res) => {
  // The server's own credential: without it, nothing (the gateway sends it; agents never see it).
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"unauthorized"}');
    return;
  }
  // A tool server reads no more than it means to: a body past the limit is refused, not held.
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > BODY_LIMIT_BYTES) {
      res.writeHead(413, { 'Content-Type': 'application/json', Connection: 'close' }).end('{"error":"body too large"}');
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > BODY_LIMIT_BYTES) return;
    void (async () => {
      const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? sessions.get(id) : undefined;
      if (!transport) {
        if (typeof id === 'string') {
          res
            .writeHead(404, { 'Content-Type': 'application/json' })
            .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
          return;
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => void sessions.set(sid, created),
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        await bank().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
});

listener.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(listener.address() as AddressInfo).port}/mcp`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const transport of sessions.values()) void transport.close();
    listener.close(() => process.exit(0));
  });
}
