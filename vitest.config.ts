import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// Pure unit tests beside their code, and the integration suite (*.int.test.ts) run twice, once on
// embedded PGlite and once on a real PostgreSQL server. *.postgres.int.test.ts files test what only
// a server has (a connection to cut, other sessions holding locks): PostgreSQL only.
//
// Integration files share their worker's modules (isolate: false): each file makes its own runtime
// and database, and evaluating the whole service's module graph again for every file was a quarter
// of the suite's time. The setup file still runs before each file. Files that replace modules
// (vi.mock) would leak their stand-ins into the files after them, so they run isolated, in
// projects of their own (`int-<engine>-mocked`).
const alias = { '@': path.resolve(import.meta.dirname) };
const MOCKING = ['test/api/output-checks.int.test.ts'];
const integration = (engine: 'pglite' | 'postgres', mocked: boolean) => ({
  resolve: { alias },
  test: {
    name: `int-${engine}${mocked ? '-mocked' : ''}`,
    include: mocked ? MOCKING : ['**/*.int.test.ts'],
    exclude: [
      'node_modules/**',
      '.next/**',
      'e2e/**',
      ...(engine === 'pglite' ? ['**/*.postgres.int.test.ts'] : []),
      ...(mocked ? [] : MOCKING),
    ],
    // Every log line is written (and kept, not shown: test/support/log-capture.ts searches them
    // all for credentials once each file is done).
    env: { TEST_ENGINE: engine, LOG_LEVEL: 'debug' },
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/log-capture.ts'],
    isolate: mocked,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

export default defineConfig({
  test: {
    // Every core (vitest's default leaves one idle: half of a two-core machine). Integration files
    // spend much of their time waiting on a database or a socket, so a worker per core keeps both busy.
    maxWorkers: Number(process.env.VITEST_MAX_WORKERS) || Math.max(2, os.availableParallelism()),
    reporters: ['default', './test/support/slowest-files.ts'],
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['**/*.test.ts'],
          exclude: ['**/*.int.test.ts', 'node_modules/**', '.next/**', 'e2e/**'],
          env: { LOG_LEVEL: 'silent' },
        },
      },
      integration('pglite', false),
      integration('pglite', true),
      integration('postgres', false),
      integration('postgres', true),
    ],
  },
});
