// A server Playwright tests run against: the built app on its own fresh PGlite directory
// (.data/e2e-<port>, emptied at every start because Playwright may kill this process before it
// cleans up). playwright.config.ts starts one per worker, each on its own port.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const port = process.env.E2E_PORT ?? '3100';
const dataDir = path.join(import.meta.dirname, '..', '.data', `e2e-${port}`);
rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const root = path.join(import.meta.dirname, '..');

// Users, a key and a second workspace first, while no server holds the directory.
const setup = spawnSync(path.join(root, 'node_modules', '.bin', 'tsx'), [path.join(root, 'e2e', 'setup.ts'), dataDir], {
  stdio: 'inherit',
  env: { ...process.env, LOG_LEVEL: 'warn' },
});
if (setup.status !== 0) process.exit(setup.status ?? 1);

const server = spawn(process.execPath, [path.join(root, 'scripts', 'serve.mjs')], {
  stdio: 'inherit',
  env: {
    ...process.env,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: port,
    PGLITE_DATA_DIR: path.join(dataDir, 'pglite'),
    APP_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'warn',
    SEED_DEMO: 'false',
    // e2e/webhooks.spec.ts delivers to a receiver on 127.0.0.1, retried quickly.
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_BASE_MS: '200',
    // e2e/gateway.spec.ts fronts an upstream MCP server it runs on 127.0.0.1.
    MCP_UPSTREAM_ALLOW_HOSTS: '127.0.0.1',
    // e2e/transport.spec.ts waits for these to cut slow clients.
    HTTP_HEADERS_TIMEOUT_MS: '1500',
    HTTP_REQUEST_TIMEOUT_MS: '3000',
  },
});
const stop = (signal) => server.kill(signal);
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
server.on('exit', (code) => {
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(code ?? 0);
});
