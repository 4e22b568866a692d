// The load generator of `npm run bench -- --only waiters` (bench/waiters.ts starts it): a process of
// its own, so what it spends on ten thousand sockets is not the server's. Plain JavaScript on
// node:http with a minimal SSE reader (no SDK client, no EventSource): the server is measured, not
// this.
//
// It opens, from the config file named on its command line:
// - SSE leases of GET /api/v1/events/stream?format=sse with an API key (agents following events);
// - the same with a signed-in human's session cookie (the live inbox's stream);
// - MCP waits: initialize, notifications/initialized, then tools/call request_decision with
//   wait_seconds, whose answer comes when a human rules.
// Then, on the parent's messages (IPC): `reset` starts counting deliveries, `report` sends back
// every delivery's latency (arrival − the event's occurredAt, or − the ruling's resolved_at: the
// same clock, one machine) and how many arrived.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { drain, mcpPoster } from './mcp-post.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const base = new URL(cfg.url);

let counting = false;
const sseLatencies = [];
const mcpLatencies = [];
const failures = [];
let sseEvents = 0;
let mcpAnswers = 0;
const open = [];

/** Reads an SSE body frame by frame (blank-line separated), calling `frame(text, arrivedAt)`. */
function readFrames(res, frame) {
  res.setEncoding('utf8');
  let buffer = '';
  res.on('data', (chunk) => {
    const arrived = Date.now();
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      frame(buffer.slice(0, end), arrived);
      buffer = buffer.slice(end + 2);
    }
  });
  res.on('error', () => undefined);
}

/** One SSE lease; resolves once its first frame (retry:) arrived. */
function lease(path, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get(new URL(path, base), { agent, headers }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`SSE lease answered ${res.statusCode}`));
        return;
      }
      readFrames(res, (frame, arrived) => {
        if (frame.startsWith('retry:')) return resolve();
        if (!frame.startsWith('id: ') || !counting) return;
        const at = Date.parse(/"occurredAtCanonical":"([^"]+)"/.exec(frame)?.[1] ?? '');
        sseEvents++;
        sseLatencies.push(arrived - at);
      });
    });
    req.on('error', reject);
    open.push(req);
  });
}

const mcpPost = mcpPoster(base, agent, open);

/** One MCP wait: a session, then request_decision with wait_seconds; resolves once the call is under way. */
async function mcpWait(key, title) {
  const auth = { authorization: `Bearer ${key}` };
  const init = await mcpPost(
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-waiter', version: '1' } },
    },
    auth,
  );
  if (init.statusCode !== 200) throw new Error(`initialize answered ${init.statusCode}`);
  const session = init.headers['mcp-session-id'];
  await drain(init);
  const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  const initialized = await mcpPost({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  await drain(initialized);
  const call = await mcpPost(
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'request_decision', arguments: { title, wait_seconds: cfg.waitSeconds } },
    },
    headers,
  );
  if (call.statusCode !== 200) throw new Error(`tools/call answered ${call.statusCode}`);
  readFrames(call, (frame, arrived) => {
    const data = frame
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6))
      .join('\n');
    if (!data) return;
    const message = JSON.parse(data);
    if (message.id !== 2) return;
    const decision = message.result?.structuredContent?.decision;
    if (!counting || !decision?.resolution) return;
    mcpAnswers++;
    mcpLatencies.push(arrived - Date.parse(decision.resolution.resolved_at));
  });
}

/** Runs `tasks` (functions returning promises) `width` at a time; counts the failures. */
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

const leasePath = (cursor, extra = '') =>
  `/api/v1/events/stream?format=sse&lease_ms=${cfg.leaseMs}&poll_ms=10000&cursor=${encodeURIComponent(cursor)}${extra}`;
const tasks = [];
for (const w of cfg.workspaces) {
  for (let i = 0; i < w.sse; i++) tasks.push(() => lease(leasePath(w.cursor), { authorization: `Bearer ${w.apiKey}` }));
  for (let i = 0; i < w.session; i++) {
    tasks.push(() => lease(leasePath(w.cursor, `&workspace_id=${w.workspaceId}`), { cookie: w.cookie, origin: cfg.url }));
  }
  for (let i = 0; i < w.mcp; i++) tasks.push(() => mcpWait(w.apiKey, `Bench wait ${i}`));
}
// Interleaved, so every kind opens from the start.
tasks.sort(() => Math.random() - 0.5);
const started = Date.now();
await pool(tasks, 64);
process.send({ type: 'ready', opened: tasks.length - failures.length, failures: failures.slice(0, 5), ms: Date.now() - started });

process.on('message', (message) => {
  if (message.type === 'reset') {
    counting = true;
    sseLatencies.length = 0;
    mcpLatencies.length = 0;
    sseEvents = 0;
    mcpAnswers = 0;
  } else if (message.type === 'report') {
    process.send({ type: 'report', sseLatencies, mcpLatencies, sseEvents, mcpAnswers });
  } else if (message.type === 'stop') {
    for (const req of open) req.destroy();
    process.exit(0);
  }
});
