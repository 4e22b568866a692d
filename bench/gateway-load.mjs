// The load generator of the gateway's memory measure (bench/gateway.ts starts it): guarded calls
// (guard ask) left waiting for a ruling no one makes, each on a connection and an MCP session of
// its own, as that many agents would hold them. A process of its own, and plain JSON-RPC over
// node:http rather than the SDK's client, so that what it spends on a thousand sockets is neither
// the server's nor the bench's.
//
// From the config file named on its command line: the service's URL, an API key, the tool to call
// and how many calls. Each call gets arguments of its own, so each raises a decision of its own.
// It tells the parent (IPC) `ready` once every call's response has begun (the service has taken
// it; its decision may still be being raised), counting the ones that failed to, and on `stop`
// closes every connection and exits.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { drain, mcpPoster } from './mcp-post.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const base = new URL(cfg.url);
const PROTOCOL = '2025-11-25';

const open = [];
const failures = [];
/** Calls whose response ended before `stop`: an answer came (a ruling, an error) rather than the wait. */
let answered = 0;
let progress = 0;

const post = mcpPoster(base, agent, open);

/** One agent's guarded call: a session, then tools/call; resolves once the call's answer has begun. */
async function ask(i) {
  const auth = { authorization: `Bearer ${cfg.apiKey}` };
  const init = await post(
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'bench-gateway-ask', version: '1' } },
    },
    auth,
  );
  if (init.statusCode !== 200) throw new Error(`initialize answered ${init.statusCode}`);
  const session = init.headers['mcp-session-id'];
  await drain(init);
  const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL };
  await drain(await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers));
  const call = await post(
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      // Arguments of its own: the same call twice would join the first's decision.
      params: { name: cfg.tool, arguments: { from: i + 1, to: i + 2, amount: 100 + i }, _meta: { progressToken: `p${i}` } },
    },
    headers,
  );
  if (call.statusCode !== 200) throw new Error(`tools/call answered ${call.statusCode}`);
  call.setEncoding('utf8');
  call.on('data', (chunk) => {
    if (chunk.includes('notifications/progress')) progress++;
  });
  call.on('end', () => answered++);
  call.on('error', () => undefined);
}

/** Runs `tasks` `width` at a time; counts the failures. */
async function pool(tasks, width) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) {
        const task = tasks[next++];
        try {
          await task();
        } catch (err) {
          failures.push(err.message);
        }
      }
    }),
  );
}

const started = Date.now();
await pool(
  Array.from({ length: cfg.calls }, (_, i) => () => ask(cfg.offset + i)),
  64,
);
process.send({ type: 'ready', opened: cfg.calls - failures.length, failures: failures.slice(0, 5), ms: Date.now() - started });

process.on('message', (message) => {
  if (message.type === 'count') process.send({ type: 'count', answered, progress });
  else if (message.type === 'stop') {
    for (const req of open) req.destroy();
    process.send({ type: 'stopped', answered, progress }, () => process.exit(0));
  }
});
