/** Once per integration run: a migrated database that each test file starts from. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '@/db';
import { testPostgres } from './postgres-server';

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  const engine = project.config.env?.TEST_ENGINE ?? process.env.TEST_ENGINE;
  return engine === 'postgres' ? postgresTemplate(project) : pgliteSnapshot(project);
}

/**
 * PGlite: a migrated cluster dumped to a file once; each test file loads it (about 0.6 s here)
 * instead of creating a cluster (about 2-3 s).
 */
async function pgliteSnapshot(project: TestProject): Promise<() => Promise<void>> {
  const handle = await openDatabase({ dataDir: 'memory://' });
  await handle.migrate();
  const dump = await handle.dump!();
  await handle.close();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-pglite-snapshot-'));
  const file = path.join(dir, 'migrated.tar');
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgliteSnapshot', file);
  return async () => rmSync(dir, { recursive: true, force: true });
}

/**
 * PostgreSQL: a migrated template database; each test file clones it with create database …
 * template. On the server at TEST_DATABASE_URL (or 127.0.0.1:5432) when it answers, else on an
 * embedded one started for this run (postgres-server.ts).
 */
async function postgresTemplate(project: TestProject): Promise<() => Promise<void>> {
  const server = await testPostgres();
  const name = `aws_template_${randomBytes(6).toString('hex')}`;
  const admin = postgres(server.adminUrl, { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`create database ${name}`);
  } catch (err) {
    await admin.end();
    await server.stop();
    throw new Error(
      `Integration tests on PostgreSQL cannot create a database at ${new URL(server.adminUrl).host}: ${(err as Error).message}`,
    );
  }
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ url: url.toString(), poolMax: 1 });
  await handle.migrate();
  await handle.close();
  project.provide('pgAdminUrl', server.adminUrl);
  project.provide('pgTemplate', name);
  return async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
    await server.stop();
  };
}
