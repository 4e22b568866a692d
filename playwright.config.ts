import { existsSync } from 'node:fs';
import { chromium, defineConfig } from '@playwright/test';

import { e2eServerPort } from './e2e/support';

/**
 * Spec files run on two workers at once (E2E_WORKERS to change it), each against a server of its
 * own (e2e/serve.mjs on port E2E_PORT + the worker's slot, its own PGlite directory): much of an
 * end-to-end test is waiting (on a page, a process, a lease running out), and with one worker the
 * run took 8.4 minutes. A server per worker keeps each file's world its own, as with one worker.
 */
const workers = Number(process.env.E2E_WORKERS) || 2;
const ports = Array.from({ length: workers }, (_, slot) => e2eServerPort(slot));

/**
 * The Chromium to drive: CHROMIUM_PATH, else the system's (Debian's package), else the one
 * `npx playwright install chromium` put in Playwright's cache (undefined: Playwright's default).
 * With none, the run stops at once and says how to get one.
 */
function chromiumPath(): string | undefined {
  for (const candidate of [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser']) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  if (existsSync(chromium.executablePath())) return undefined;
  throw new Error(
    'The end-to-end tests need Chromium and found none. Install one (Debian or Ubuntu: apt-get install chromium), ' +
      'point CHROMIUM_PATH at one, or run: npx playwright install chromium',
  );
}

// The app must be built first (npm run test:e2e does).
export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/global-setup.ts',
  timeout: 30_000,
  retries: 0,
  workers,
  reporter: [['list']],
  // The spec files that took longest, printed at the end: where the run's time goes.
  reportSlowTests: { max: 15, threshold: 5_000 },
  use: {
    // Each worker evaluates this file with its slot in TEST_PARALLEL_INDEX: its own server.
    baseURL: `http://127.0.0.1:${e2eServerPort(Number(process.env.TEST_PARALLEL_INDEX ?? 0))}`,
    launchOptions: {
      executablePath: chromiumPath(),
      args: [
        '--no-sandbox',
        '--headless',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: ports.map((port) => ({
    command: 'node e2e/serve.mjs',
    env: { E2E_PORT: String(port) },
    url: `http://127.0.0.1:${port}/api/v1/health`,
    timeout: 60_000,
    reuseExistingServer: false,
    stdout: 'pipe' as const,
    stderr: 'pipe' as const,
  })),
});
