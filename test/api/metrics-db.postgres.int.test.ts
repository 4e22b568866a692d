/**
 * The database metrics (docs/contract.md §13.3), PostgreSQL only: the connection pool's size, connections in use
 * and queries waiting for one (patches/postgres+3.4.9.patch, change 10), and the database errors
 * that reach a request, by SQLSTATE class.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { measurePoolWith } from '@/server/metrics';
import { holdLedgerHead } from '../support/held-lock';
import { metricValue } from '../support/metrics';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ DB_POOL_MAX: '2', DB_LOCK_TIMEOUT_MS: '300' });
  measurePoolWith(app.runtime.poolStats!);
});
afterAll(async () => app?.close());

it('shows the pool: its size, connections in use, and transactions waiting for one', async () => {
  expect(await metricValue('aws_db_pool_connections', { state: 'max' })).toBe(2);
  expect(await metricValue('aws_db_pool_waiting')).toBe(0);
  // Three transactions on a pool of two: two hold a connection, one waits for it. They hold until the
  // test lets go (not a sleep that a busy machine could outlast before the poll looks). The service's
  // own jobs share the pool and may queue behind them too, so the wait is at least ours.
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  const running = Array.from({ length: 3 }, () =>
    app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      await held;
    }),
  );
  try {
    // The pool opens connections lazily: while the second connects, two transactions wait for it.
    const pool = async () => ({
      inUse: await metricValue('aws_db_pool_connections', { state: 'in_use' }),
      waits: (await metricValue('aws_db_pool_waiting')) >= 1,
    });
    await expect.poll(pool, { timeout: 5_000, interval: 20 }).toEqual({ inUse: 2, waits: true });
  } finally {
    letGo();
  }
  await Promise.all(running);
  await expect.poll(() => metricValue('aws_db_pool_waiting'), { timeout: 5_000, interval: 20 }).toBe(0);
  await expect.poll(() => metricValue('aws_db_pool_connections', { state: 'in_use' }), { timeout: 5_000, interval: 20 }).toBe(0);
});

it('counts a database error that reached a request by its SQLSTATE class', async () => {
  const before = await metricValue('aws_db_errors_total', { class: '55' });
  // Another session holds the workspace's ledger head past lock_timeout: 55P03 lock_not_available.
  const head = await holdLedgerHead(app.runtime.databaseUrl!, app.ws.workspaceId);
  let res;
  try {
    res = await app.request('POST', '/work', { body: { title: 'waits for the head' } });
  } finally {
    await head.release();
  }
  expect(res.status).toBe(503);
  expect(await metricValue('aws_db_errors_total', { class: '55' })).toBe(before + 1);
});
