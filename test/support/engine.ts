/**
 * The database engine of an integration run (TEST_ENGINE): a fresh in-memory PGlite, or a fresh
 * PostgreSQL database cloned from the migrated template that global-setup.ts prepared.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { inject } from 'vitest';
import postgres from 'postgres';
import { parseEnv, type Env } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';

export type TestEngine = 'pglite' | 'postgres';

export function testEngine(): TestEngine {
  const engine = process.env.TEST_ENGINE;
  if (engine !== 'pglite' && engine !== 'postgres') throw new Error('TEST_ENGINE must be pglite or postgres');
  return engine;
}

/**
 * The PostgreSQL server tests may create databases on: the one global-setup.ts found answering
 * (TEST_DATABASE_URL or 127.0.0.1:5432), or the embedded one it started (postgres-server.ts).
 */
export function adminUrl(): string {
  return inject('pgAdminUrl');
}

function databaseUrl(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestRuntime extends Runtime {
  /** The PostgreSQL connection string of this test's database (postgres engine only). */
  databaseUrl?: string;
}

export interface RuntimeOptions {
  /** PostgreSQL only: the address the app connects through, given the test database's (e.g. a proxy the test controls). */
  via?: (databaseUrl: string) => string;
}

export async function createTestRuntime(overrides: Record<string, string> = {}, opts: RuntimeOptions = {}): Promise<TestRuntime> {
  const engine = testEngine();
  if (engine === 'pglite') {
    const env: Env = parseEnv({ NODE_ENV: 'test', PGLITE_DATA_DIR: 'memory://', SEED_DEMO: 'false', ...overrides });
    const snapshot = new Blob([readFileSync(inject('pgliteSnapshot'))]);
    return createRuntime(env, { pgliteSnapshot: snapshot });
  }
  const template = inject('pgTemplate');
  const name = `aws_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`create database ${name} template ${template}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const env: Env = parseEnv({
    NODE_ENV: 'test',
    DATABASE_URL: opts.via ? opts.via(url) : url,
    SEED_DEMO: 'false',
    DB_POOL_MAX: '40',
    ...overrides,
  });
  const runtime = await createRuntime(env);
  return {
    ...runtime,
    databaseUrl: url,
    async close() {
      await runtime.close();
      const drop = postgres(adminUrl(), { max: 1, onnotice: () => undefined });
      try {
        await drop.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await drop.end();
      }
    },
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    pgliteSnapshot: string;
  }
}
