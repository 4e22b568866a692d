// The server Playwright tests run against: the built app on its own fresh PGlite directory
// (.data/e2e, emptied at every start because Playwright may kill this process before it cleans up).
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const port = process.env.E2E_PORT ?? '3100';
const dataDir = path.join(import.meta.dirname, '..', '.data', 'e2e');
rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const nextBin = path.join(import.meta.dirname, '..', 'node_modules', 'next', 'dist', 'bin', 'next');
const server = spawn(process.execPath, [nextBin, 'start', '-H', '127.0.0.1', '-p', port], {
  stdio: 'inherit',
  env: { ...process.env, PGLITE_DATA_DIR: path.join(dataDir, 'pglite'), APP_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'warn' },
});
const stop = (signal) => server.kill(signal);
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
server.on('exit', (code) => {
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(code ?? 0);
});
