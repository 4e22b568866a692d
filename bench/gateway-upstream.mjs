// The upstream MCP server of `npm run bench -- --only gateway` (bench/gateway.ts starts it): the
// SDK's low-level Server over its stateful Streamable HTTP transport on 127.0.0.1, one Server per
// session as the SDK asks, in a process of its own so that its CPU is not the bench's or the
// service's. The bench calls it directly and through the gateway, the same tools on the same
// server.
//
// Tools:
// - echo: its arguments back, at once (what the gateway adds shows whole);
// - account: one row read by primary key from a small table of its own (accounts, 1,000 rows) in
//   a scratch PostgreSQL database, over its own connection: the work a real tool does before it
//   answers;
// - wipe (guard deny) and transfer (guarded: ask): the bench calls them through the gateway only,
//   and neither may ever run here (nothing denied is sent, and no one approves the asked calls).
//
// Env: PORT, DATABASE_URL (the scratch database; the table is made here). GET /health answers once
// the table is there; GET /stats gives the calls received per tool.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const ACCOUNTS = 1000;
const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => undefined });
await sql`create table if not exists accounts (id int primary key, owner text not null, balance numeric(12, 2) not null, opened_at timestamptz not null)`;
await sql`
  insert into accounts
  select i, 'owner ' || i, (i * 37 % 10000) / 3.0, now() - make_interval(days => i) from generate_series(1, ${ACCOUNTS}) as i
  on conflict do nothing`;
await sql`analyze accounts`;

const TOOLS = [
  {
    name: 'echo',
    description: 'Says its arguments back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' }, n: { type: 'number' } } },
  },
  {
    name: 'account',
    description: 'Reads one account by its id.',
    inputSchema: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'] },
  },
  {
    name: 'wipe',
    description: 'Deletes every account.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'transfer',
    description: 'Moves money between two accounts.',
    inputSchema: {
      type: 'object',
      properties: { from: { type: 'integer' }, to: { type: 'integer' }, amount: { type: 'number' } },
      required: ['from', 'to', 'amount'],
    },
  },
];

const received = { echo: 0, account: 0, wipe: 0, transfer: 0 };
const text = (value) => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });

function serverFor() {
  const server = new Server({ name: 'bench-upstream', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    const name = request.params.name;
    if (name in received) received[name]++;
    if (name === 'echo') return text(args);
    if (name === 'account') {
      const [row] = await sql`select id, owner, balance, opened_at from accounts where id = ${Number(args.id)}`;
      return row ? text(row) : { content: [{ type: 'text', text: `No account ${args.id}.` }], isError: true };
    }
    if (name === 'transfer') return text({ moved: args.amount });
    if (name === 'wipe') return text({ wiped: true });
    return { content: [{ type: 'text', text: `No tool ${name}.` }], isError: true };
  });
  return server;
}

const sessions = new Map();

async function mcp(req, res, body) {
  const id = req.headers['mcp-session-id'];
  let transport = typeof id === 'string' ? sessions.get(id) : undefined;
  if (!transport) {
    if (typeof id === 'string') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => void sessions.set(sid, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await serverFor().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

const httpServer = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') return void res.writeHead(200).end('ok');
  if (req.method === 'GET' && req.url === '/stats') {
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received, sessions: sessions.size }));
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    mcp(req, res, body).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
});
httpServer.listen(Number(process.env.PORT), '127.0.0.1');

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    httpServer.closeAllConnections();
    httpServer.close();
    void sql.end({ timeout: 1 }).finally(() => process.exit(0));
  });
}
