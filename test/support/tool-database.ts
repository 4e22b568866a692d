/**
 * The database command-line tools run against in a test, on the run's engine: a PostgreSQL database
 * cloned from the template, or a PGlite directory in a scratch folder. Tools are processes, so they
 * get it through their environment (`env`); the test opens it itself with `withDb` (PGlite: only
 * while no tool holds the directory, which is locked to one process).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';
import { createTestRuntime, testEngine } from './engine';

export interface ToolDatabase {
  /** A scratch folder of the test's, removed by close(). */
  dir: string;
  /** What a tool process needs in its environment to open the database. */
  env: Record<string, string>;
  withDb<T>(fn: (rt: Runtime) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function toolDatabase(prefix: string): Promise<ToolDatabase> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `aws-${prefix}-`));
  const pg = testEngine() === 'postgres' ? await createTestRuntime() : undefined;
  const env: Record<string, string> = pg ? { DATABASE_URL: pg.databaseUrl! } : { PGLITE_DATA_DIR: path.join(dir, 'pglite') };
  return {
    dir,
    env,
    async withDb(fn) {
      if (pg) return fn(pg);
      const rt = await createRuntime(parseEnv({ NODE_ENV: 'test', PGLITE_DATA_DIR: env.PGLITE_DATA_DIR, SEED_DEMO: 'false' }));
      try {
        return await fn(rt);
      } finally {
        await rt.close();
      }
    },
    async close() {
      await pg?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
