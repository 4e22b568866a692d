/**
 * The typed client's retries against the real transport over sockets, when the database stops:
 * the server answers 503 with Retry-After, the client waits that long and sends the same write
 * again, with the same Idempotency-Key, until the database is back; the write happens once.
 * PostgreSQL only: a TCP proxy the test controls stands between the app and the database.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAwsClient } from '@/clients/typescript';
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

it('retries a 503 from a stopped database after Retry-After, with the same Idempotency-Key, and the write happens once', async () => {
  const attempts: { key: string | null; status: number; retryAfter: string | null }[] = [];
  const recording: typeof fetch = async (input) => {
    const response = await fetch(input);
    attempts.push({
      key: (input as Request).headers.get('idempotency-key'),
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
    });
    return response;
  };
  const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: app.ws.apiKey, fetch: recording });
  await database.down();
  const writing = aws.api.POST('/work', { body: { title: 'written once, after the outage' } });
  // Back after the first answer (a 503), while the client waits out its Retry-After.
  const deadline = Date.now() + 10_000;
  while (attempts.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await database.up();
  const written = await writing;

  expect(written.response.status).toBe(201);
  expect(attempts[0]).toMatchObject({ status: 503 });
  expect(Number(attempts[0]!.retryAfter)).toBeGreaterThan(0);
  expect(attempts.at(-1)!.status).toBe(201);
  expect(new Set(attempts.map((a) => a.key)).size).toBe(1);
  const listed = await app.request('GET', '/tasks?limit=100');
  expect(listed.body.data.filter((t: { title: string }) => t.title === 'written once, after the outage')).toHaveLength(1);
});
