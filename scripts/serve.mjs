// The service's HTTP server: one node:http server in one process, in front of two handlers.
//
// - /api/v1 goes straight to the REST transport's node:http handler (server/http/node-api.ts):
//   Next.js's request pipeline costs more than the whole API request behind it (docs/performance.md).
// - /mcp goes to the MCP endpoint (server/mcp/http.ts), whose tools run through the same REST
//   transport in this process.
// - Everything else (pages, /api/auth, /api/trpc) goes to the built Next.js app, its body (if any)
//   read first under a limit (server/http/next-bodies.ts).
//
// The API and MCP handlers, and the service's start (server/boot.ts), come from server/ bundled
// on its own (server/http/serve-entry.ts, scripts/bundle.mjs), not from Next's build: Next.js is
// loaded on the first request that needs it. An instance that only serves agents never loads it,
// and holds ~40 MiB less, which is room for ~2,500 more waiting agents (docs/performance.md).
// Next's copy of server/ shares the running service with this one: the runtime, the boot and the
// stop hooks, and the metrics are kept on globalThis under Symbol.for keys.
//
// It also records who connected. Next keeps an X-Forwarded-For that a client sends and only adds
// the peer address when the header is absent, so a client talking to it directly could claim any
// address and escape the validator's per-address rate limit. Here the peer address of every
// connection is appended to X-Forwarded-For, as a reverse proxy does, so its last entry is always
// the address that connected (server/rate-limits.ts).
//
// Usage: node scripts/serve.mjs (HOST and PORT choose where to listen, default 127.0.0.1:3000).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { bundle } from './bundle.mjs';

const root = path.resolve(import.meta.dirname, '..');
const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? '3000');
// Opening (on a first start: creating) the database takes seconds to tens of seconds: said first,
// and every 10 s until it is open.
console.log('Starting the service: opening the database…');
const bootStarted = performance.now();
const booting = setInterval(
  () => console.log(`  … still starting (${Math.round((performance.now() - bootStarted) / 1000)} s so far)`),
  10_000,
);
/** @type {import('../server/http/serve-hooks').ServerHooks} */
const {
  handleApiRequest,
  handleMcpRequest,
  endMcpSessions,
  boundedForNext,
  endEventStreams,
  onStop,
  metricsText,
  boot,
  log,
  transportSecurityHeaders,
} = (await import(await bundle('server/http/serve-entry.ts', 'serve-entry'))).hooks;
// A start that failed (a database that cannot be opened) says why in one line.
const runtime = await boot()
  .catch((err) => {
    console.error(`Cannot start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  })
  .finally(() => clearInterval(booting));
// HSTS when APP_URL is https. /api/v1 and /mcp write it with their own headers; Next's answers
// (pages, /api/auth, /api/trpc, its assets and redirects) get it set here, before Next writes.
const pageHeaders = Object.entries(transportSecurityHeaders(runtime.env.APP_URL));
// The embedded database is this process's alone: the command-line tools run here, through a local
// socket beside its directory (scripts/tool-socket.ts says why that is safe).
if (runtime.engine === 'pglite' && !runtime.env.PGLITE_DATA_DIR.startsWith('memory://')) {
  const { serveTools } = await import(await bundle(path.join('scripts', 'tool-service.ts'), 'tool-service'));
  await serveTools(runtime, async (name) => (await import(await bundle(path.join('scripts', `${name}.ts`), `service-${name}`))).default);
}

// Next.js, prepared on first use. Its prepare() runs instrumentation.ts, whose boot() finds the
// service this process has already started.
let pages = null;
function nextHandler() {
  pages ??= (async () => {
    const started = performance.now();
    const { default: next } = await import('next');
    const app = next({ dev: false, dir: root, hostname: host, port });
    await app.prepare();
    log('info', 'pages loaded', { ms: Math.round(performance.now() - started) });
    return app.getRequestHandler();
  })().catch((err) => {
    // Tried again by the next page request.
    pages = null;
    throw err;
  });
  return pages;
}

const isApi = (url) => url === '/api/v1' || url.startsWith('/api/v1/') || url.startsWith('/api/v1?');
const isMcp = (url) => url === '/mcp' || url.startsWith('/mcp/') || url.startsWith('/mcp?');

// Requests whose response has not finished: stopping waits for them (up to DRAIN_MS).
let inFlight = 0;
let stopping = false;
let drained = () => {};

// Slow clients (slow-loris) cannot hold connections: headers must arrive within
// HTTP_HEADERS_TIMEOUT_MS (10 s) and the whole request within HTTP_REQUEST_TIMEOUT_MS (60 s;
// a response, an event stream's included, is not bound by it); both are checked every second.
// An idle kept-alive connection closes after 5 s.
const timeouts = {
  headersTimeout: Number(process.env.HTTP_HEADERS_TIMEOUT_MS ?? 10_000),
  requestTimeout: Number(process.env.HTTP_REQUEST_TIMEOUT_MS ?? 60_000),
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000,
};
const server = http.createServer(timeouts, (req, res) => {
  inFlight++;
  // 'close' comes once: `on` keeps the listener alone, where `once` wraps it (~150 bytes a
  // response, kept for as long as an event stream or an MCP wait is open).
  res.on('close', () => {
    inFlight--;
    if (stopping) {
      // A kept-alive connection that has just finished its last request is closed, not kept.
      server.closeIdleConnections();
      if (inFlight === 0) drained();
    }
  });
  if (stopping) res.setHeader('Connection', 'close');
  const peer = req.socket.remoteAddress ?? 'unknown';
  const forwarded = req.headers['x-forwarded-for'];
  req.headers['x-forwarded-for'] = forwarded ? `${forwarded}, ${peer}` : peer;
  if (isApi(req.url ?? '/')) {
    void handleApiRequest(req, res);
    return;
  }
  if (isMcp(req.url ?? '/')) {
    void handleMcpRequest(req, res);
    return;
  }
  for (const [name, value] of pageHeaders) res.setHeader(name, value);
  // Next reads bodies whole and unbounded: each is read here first, under its limit (413 beyond).
  boundedForNext(req, res)
    .then(async (bounded) => bounded && (await nextHandler())(bounded, res))
    .catch((err) => {
      console.error('request failed', err);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('Internal Server Error');
    });
});
server.on('error', (err) => {
  console.error(`Cannot listen on ${host}:${port}: ${err.message}`);
  process.exit(1);
});

// Behind a load balancer: how long to go on serving as usual once stopping has begun, while GET
// /api/v1/ready already answers 503, so the balancer has seen it and stopped sending before the
// listener closes (set it above the balancer's check interval). 0 by default, at most 5 s.
const DRAIN_DELAY_MS = Math.min(Math.max(Number(process.env.DRAIN_DELAY_MS ?? 0) || 0, 0), 5_000);
// How long requests in flight get to finish once the listener has closed; then their connections
// are cut. With the delay, under the 10 s the launcher promises, with room for closing the database after.
const DRAIN_MS = 7_000 - DRAIN_DELAY_MS;
// On SIGINT or SIGTERM (server/shutdown.ts, installed by server/boot.ts): after DRAIN_DELAY_MS,
// take no new connection, end event-stream leases with lease_end and MCP waits with the decision as
// it stands, let the rest finish; then the
// jobs and the database stop.
onStop('requests', async () => {
  if (DRAIN_DELAY_MS > 0) await new Promise((resolve) => setTimeout(resolve, DRAIN_DELAY_MS));
  stopping = true;
  server.close();
  server.closeIdleConnections();
  await Promise.all([endEventStreams(), endMcpSessions()]);
  if (inFlight > 0) {
    await new Promise((resolve) => {
      drained = resolve;
      setTimeout(resolve, DRAIN_MS).unref();
    });
  }
  server.closeAllConnections();
});

// The metrics (server/metrics.ts) for an operator's scraper, on a listener of their own and only
// when METRICS_PORT is set: bound to 127.0.0.1 unless METRICS_HOST says otherwise, never on the
// API's port, so no API client can read them. Only GET /metrics is served there.
if (process.env.METRICS_PORT) {
  const metricsHost = process.env.METRICS_HOST || '127.0.0.1';
  const metricsPort = Number(process.env.METRICS_PORT);
  const metrics = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '/').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Only GET /metrics is served here.\n');
      return;
    }
    metricsText().then(
      ({ contentType, text }) => res.writeHead(200, { 'Content-Type': contentType }).end(text),
      (err) => {
        console.error('metrics failed', err);
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end('The metrics could not be collected.\n');
      },
    );
  });
  metrics.on('error', (err) => {
    console.error(`Cannot serve metrics on ${metricsHost}:${metricsPort}: ${err.message}`);
    process.exit(1);
  });
  metrics.listen(metricsPort, metricsHost);
  // Scraped to the end: closed with the database, after the requests have finished.
  onStop('resources', async () => {
    metrics.closeAllConnections();
    await new Promise((resolve) => metrics.close(resolve));
  });
}

// The one address to open: APP_URL (what npm start sets; links, sign-in cookies and resolve_url
// use it), else where the server listens.
const appUrl = process.env.APP_URL || `http://${host}:${port}`;
server.listen(port, host, () => {
  console.log(`\n  Ready: open ${appUrl}  (listening on ${host}:${port}; Ctrl-C stops it)\n`);
});
