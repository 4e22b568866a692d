// The service's HTTP server: one node:http server in one process, in front of two handlers.
//
// - /api/v1 goes straight to the REST transport (server/http/node-api.ts, bundled into
//   .next/api/node-api.mjs by scripts/build-api.mjs): Next.js's request pipeline costs more than
//   the whole API request behind it (README, Performance).
// - Everything else (pages, /api/auth, /api/trpc) goes to the built Next.js app.
//
// It also records who connected. Next keeps an X-Forwarded-For that a client sends and only adds
// the peer address when the header is absent, so a client talking to it directly could claim any
// address and escape the validator's per-address rate limit. Here the peer address of every
// connection is appended to X-Forwarded-For, as a reverse proxy does, so its last entry is always
// the address that connected (server/rate-limits.ts).
//
// Usage: node scripts/serve.mjs (HOST and PORT choose where to listen, default 127.0.0.1:3000).
import { existsSync, readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import next from 'next';

const root = path.resolve(import.meta.dirname, '..');
const bundle = path.join(root, '.next', 'api', 'node-api.mjs');
if (!existsSync(bundle)) {
  console.error(`${path.relative(root, bundle)} is missing: run npm run build (next build, then the API bundle).`);
  process.exit(1);
}
const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? '3000');
const app = next({ dev: false, dir: root, hostname: host, port });
const handleNext = app.getRequestHandler();
// Next's prepare() runs instrumentation.ts: the database is opened, migrated and seeded there.
await app.prepare();
const { handleApiRequest } = await import(bundle);
warnIfStale(bundle, ['server', 'db']);

const isApi = (url) => url === '/api/v1' || url.startsWith('/api/v1/') || url.startsWith('/api/v1?');

const server = http.createServer((req, res) => {
  const peer = req.socket.remoteAddress ?? 'unknown';
  const forwarded = req.headers['x-forwarded-for'];
  req.headers['x-forwarded-for'] = forwarded ? `${forwarded}, ${peer}` : peer;
  if (isApi(req.url ?? '/')) {
    void handleApiRequest(req, res);
    return;
  }
  handleNext(req, res).catch((err) => {
    console.error('request failed', err);
    if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
    res.end('Internal Server Error');
  });
});
server.on('error', (err) => {
  console.error(`Cannot listen on ${host}:${port}: ${err.message}`);
  process.exit(1);
});
// Stop accepting connections on the first signal; server/boot.ts closes the database and exits.
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeIdleConnections();
  });
}
server.listen(port, host, () => console.log(`  Listening on http://${host}:${port}`));

/** The bundle is built from server/ and db/ by npm run build; serving an older one is a trap. */
function warnIfStale(file, dirs) {
  const newest = (p) => {
    const st = statSync(p);
    return st.isDirectory() ? Math.max(st.mtimeMs, ...readdirSync(p).map((n) => newest(path.join(p, n)))) : st.mtimeMs;
  };
  const builtAt = statSync(file).mtimeMs;
  if (dirs.some((d) => newest(path.join(root, d)) > builtAt)) {
    console.error(`  Warning: ${path.relative(root, file)} is older than the sources in ${dirs.join(', ')}: run npm run build.`);
  }
}
