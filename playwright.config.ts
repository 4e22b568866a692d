import { existsSync } from 'node:fs';
import { chromium, defineConfig } from '@playwright/test';

const port = process.env.E2E_PORT ?? '3100';

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
  workers: 1,
  reporter: [['list']],
  // The spec files that took longest, printed at the end: where the run's time goes.
  reportSlowTests: { max: 15, threshold: 5_000 },
  use: {
    baseURL: `http://127.0.0.1:${port}`,
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
  webServer: {
    command: 'node e2e/serve.mjs',
    url: `http://127.0.0.1:${port}/api/v1/health`,
    timeout: 60_000,
    reuseExistingServer: false,
    stdout: 'pipe',
    stderr: 'pipe',
  },
});
