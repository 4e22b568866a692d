// npm start: build the app when there is no build yet (or the sources changed since), then serve
// API and UI with scripts/serve.mjs (Next.js behind a node:http server that records client addresses). HOST and PORT choose where to listen (default 127.0.0.1:3000).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { serverNodeFlags } from './server-flags.mjs';

// next's own entry, run by this node: no npx layer in between to swallow signals on shutdown.
const nextBin = path.join(import.meta.dirname, '..', 'node_modules', 'next', 'dist', 'bin', 'next');

const root = path.resolve(import.meta.dirname, '..');
// The server's V8 flags, checked before anything else (a wrong SERVER_GC says so at once).
let flags;
try {
  flags = serverNodeFlags();
} catch (err) {
  console.error(`Cannot start: ${err.message}`);
  process.exit(1);
}
const buildId = path.join(root, '.next', 'BUILD_ID');
const sources = ['app', 'server', 'db', 'drizzle', 'instrumentation.ts', 'next.config.mjs', 'package-lock.json'];

function newestMtime(p) {
  if (!existsSync(p)) return 0;
  const stat = statSync(p);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(p).reduce((max, name) => Math.max(max, newestMtime(path.join(p, name))), stat.mtimeMs);
}

// With nothing from Next for this long, a line says the build is still going, and for how long.
const HEARTBEAT_MS = 10_000;

/**
 * Runs `next build`, passing on what it prints; while it prints nothing (its compile is long and
 * silent), a line every HEARTBEAT_MS says it is still building and for how long. Resolves with its status.
 */
function build() {
  const started = Date.now();
  const elapsed = () => Math.round((Date.now() - started) / 1000);
  const child = spawn(process.execPath, [nextBin, 'build'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let quietSince = Date.now();
  child.stdout.on('data', (chunk) => ((quietSince = Date.now()), process.stdout.write(chunk)));
  child.stderr.on('data', (chunk) => ((quietSince = Date.now()), process.stderr.write(chunk)));
  // Checked every second, so no silence lasts much longer than HEARTBEAT_MS.
  const heartbeat = setInterval(() => {
    if (Date.now() - quietSince < HEARTBEAT_MS) return;
    quietSince = Date.now();
    console.log(`  … still building the web pages (${elapsed()} s so far)`);
  }, 1_000);
  // Ctrl-C or a SIGTERM while building stops the build too, and this launcher with it.
  const stopBuild = (signal) => child.kill(signal);
  process.on('SIGINT', stopBuild).on('SIGTERM', stopBuild);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearInterval(heartbeat);
      process.off('SIGINT', stopBuild).off('SIGTERM', stopBuild);
      if (code === 0) console.log(`Built the web pages in ${elapsed()} s; starting the service…`);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

const builtAt = existsSync(buildId) ? statSync(buildId).mtimeMs : 0;
const changedAt = Math.max(...sources.map((s) => newestMtime(path.join(root, s))));
if (builtAt < changedAt) {
  console.log(
    builtAt
      ? 'Sources changed since the last build: building the web pages again (a minute or two)…'
      : 'First start: building the web pages (once; under a minute on an idle 2-core machine, longer on a busy one). ' +
          'Next.js says what it is doing; a line every 10 s while it is quiet.',
  );
  const status = await build();
  if (status !== 0) process.exit(status);
}

const host = process.env.HOST ?? '127.0.0.1';
const port = process.env.PORT ?? '3000';
// Links printed at start (resolve_url, the demo's sign-in, docsUrl) follow the port unless APP_URL says otherwise.
const env = {
  ...process.env,
  NODE_ENV: 'production',
  HOST: host,
  PORT: port,
  APP_URL: process.env.APP_URL || `http://${['127.0.0.1', '0.0.0.0', '::'].includes(host) ? 'localhost' : host}:${port}`,
};
// An IPC channel, so the server stops by itself if this launcher is ever killed outright. The heap's
// flags (its cap, SERVER_HEAP_MB) are in server-flags.mjs, which says why.
const server = spawn(process.execPath, [...flags, path.join(root, 'scripts', 'serve.mjs')], {
  cwd: root,
  stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
  env,
});
// Ctrl-C reaches every process of the terminal's group; a SIGTERM (or SIGINT) sent to this process
// alone is passed on. The server stops in order and exits 0 (server/shutdown.ts); so do we.
const stop = (signal) => {
  if (server.exitCode === null && server.signalCode === null) server.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stop(signal));
// `npm start` runs this under `sh -c`: a signal sent to npm alone reaches that shell, which dies of
// it and leaves us running with a new parent. Being orphaned means whoever started us has stopped.
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  stop('SIGTERM');
}, 250);
orphaned.unref();
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
