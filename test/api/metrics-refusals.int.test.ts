/**
 * The refusals metric (docs/contract.md §13.3) for each limit that turns a request away: the public validator's
 * per-address limit, event-stream leases per key, and sign-in (a wrong password, then the lock).
 * (The API key limit: metrics.int.test.ts.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AppError } from '@/server/errors';
import { checkSignIn } from '@/server/auth/sign-in';
import { startTestApp, type TestApp } from '../support/app';
import { metricValue } from '../support/metrics';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_VALIDATOR_PER_MIN: '2', SSE_LEASES_PER_KEY: '1', SIGN_IN_MAX_ATTEMPTS: '2' });
});
afterAll(async () => app?.close());

const refusals = (reason: string) => metricValue('aws_refusals_total', { reason });

it('counts the public validator’s refusals by client address', async () => {
  const before = await refusals('validator_rate_limit');
  // The limit counts in fixed clock minutes: three requests astride a minute's end would start a new window.
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 3_000) await new Promise((r) => setTimeout(r, left + 50));
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await app.request('GET', '/agent-work-receipts/validate', { key: null })).status);
  expect(statuses).toEqual([200, 200, 429]);
  expect(await refusals('validator_rate_limit')).toBe(before + 1);
});

it('counts a lease refused because the key holds its limit of open leases', async () => {
  const before = await refusals('event_stream_leases');
  const open = new AbortController();
  const headers = { authorization: `Bearer ${app.ws.apiKey}` };
  const url = 'http://127.0.0.1/api/v1/events/stream?format=sse&lease_ms=60000';
  const first = await app.fetch(new Request(url, { headers, signal: open.signal }));
  expect(first.status).toBe(200);
  const second = await app.fetch(new Request(url, { headers }));
  expect(second.status).toBe(429);
  open.abort();
  expect(await refusals('event_stream_leases')).toBe(before + 1);
});

it('counts a failed sign-in, and a sign-in refused by the lock', async () => {
  const member = await app.member('viewer');
  const headers = new Headers({ 'x-forwarded-for': '203.0.113.9' });
  const [failed0, locked0] = [await refusals('sign_in_failed'), await refusals('sign_in_locked')];
  expect(await checkSignIn(app.runtime, member.email, 'not the password', headers)).toBeNull();
  expect(await checkSignIn(app.runtime, member.email, 'not the password', headers)).toBeNull();
  await expect(checkSignIn(app.runtime, member.email, 'not the password', headers)).rejects.toBeInstanceOf(AppError);
  expect(await refusals('sign_in_failed')).toBe(failed0 + 2);
  expect(await refusals('sign_in_locked')).toBe(locked0 + 1);
});
