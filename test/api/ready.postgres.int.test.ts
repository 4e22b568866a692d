/**
 * GET /api/v1/ready while the database cannot be reached: 503 with Retry-After, and 200 again once
 * it is back, without a restart. PostgreSQL only: a TCP proxy the test controls stands between the
 * app and the server.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app';
import { startDbProxy, type DbProxy } from '../support/db-proxy';

let database: DbProxy;
let app: TestApp;
beforeAll(async () => {
  database = await startDbProxy();
  app = await startTestApp({ DB_POOL_MAX: '2' }, { via: database.via });
});
afterAll(async () => {
  await app?.close();
  await database?.close();
});

it('answers 503 with Retry-After while the database is gone, and 200 once it is back', async () => {
  expect((await app.request('GET', '/ready', { key: null })).status).toBe(200);
  await database.down();
  const gone = await app.request('GET', '/ready', { key: null });
  expect(gone.status).toBe(503);
  expect(gone.body.error.code).toBe('service_unavailable');
  expect(gone.headers.get('retry-after')).toMatch(/^[1-9]/);
  await database.up();
  await expect.poll(async () => (await app.request('GET', '/ready', { key: null })).status, { timeout: 10_000 }).toBe(200);
});
