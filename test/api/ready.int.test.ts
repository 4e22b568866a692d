/**
 * GET /api/v1/ready, the readiness probe (docs/contract.md §13.1): 200 while the instance can serve, 503 while
 * the database lacks a migration this code ships. (The database unreachable:
 * ready.postgres.int.test.ts; draining after SIGTERM: e2e/npm-start.spec.ts.)
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { query } from '@/db';
import { startTestApp, type TestApp } from '../support/app';

const journal = JSON.parse(readFileSync('drizzle/meta/_journal.json', 'utf8')) as { entries: { tag: string; when: number }[] };
const newest = journal.entries.at(-1)!;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

it('answers 200 with the engine and the newest migration, to anyone', async () => {
  const res = await app.request('GET', '/ready', { key: null });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ status: 'ready', engine: app.runtime.engine, migration: newest.tag });
});

it('answers 503 while the database lacks the newest migration, and 200 once it has it', async () => {
  const db = app.runtime.db;
  const [row] = await query<{ id: number; hash: string; created_at: string }>(
    db,
    sql`select id, hash, created_at::text from drizzle.__drizzle_migrations where created_at = ${newest.when}`,
  );
  expect(row).toBeDefined();
  await db.execute(sql`delete from drizzle.__drizzle_migrations where id = ${row!.id}`);
  try {
    const behind = await app.request('GET', '/ready', { key: null });
    expect(behind.status).toBe(503);
    expect(behind.body.error).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining(newest.tag) });
    expect(behind.headers.get('retry-after')).toMatch(/^[1-9]/);
    // Liveness is another question: the process is alive and its database answers.
    expect((await app.request('GET', '/health', { key: null })).status).toBe(200);
  } finally {
    await db.execute(
      sql`insert into drizzle.__drizzle_migrations (id, hash, created_at) values (${row!.id}, ${row!.hash}, ${newest.when})`,
    );
  }
  expect((await app.request('GET', '/ready', { key: null })).status).toBe(200);
});
