/**
 * The service's own HTTP server (scripts/serve.mjs) appends the connecting peer to X-Forwarded-For,
 * so the public validator's per-address limit holds against a client that writes its own header.
 * Under plain `next start` a client's header is kept as is and each forged address would get a
 * fresh budget: this test would then never see a 429.
 */
import { expect, test } from '@playwright/test';

const schema = '/api/v1/agent-work-receipts/schema';

test('the validator limits the address that connected, whatever X-Forwarded-For the client sends', async ({ request }) => {
  let first = await request.get(schema, { headers: { 'x-forwarded-for': '198.51.100.1' } });
  expect(first.status()).toBe(200);
  // Keep the whole run inside one one-minute window.
  const resetMs = Number(first.headers()['x-ratelimit-reset']) * 1000;
  if (resetMs - Date.now() < 10_000) {
    await new Promise((r) => setTimeout(r, resetMs - Date.now() + 500));
    first = await request.get(schema, { headers: { 'x-forwarded-for': '198.51.100.1' } });
    expect(first.status()).toBe(200);
  }
  const remaining = Number(first.headers()['x-ratelimit-remaining']);
  expect(Number(first.headers()['x-ratelimit-limit'])).toBe(60);
  for (let i = 0; i < remaining; i++) {
    const res = await request.get(schema, { headers: { 'x-forwarded-for': `198.51.100.${i + 2}` } });
    expect(res.status()).toBe(200);
  }
  const over = await request.get(schema, { headers: { 'x-forwarded-for': '203.0.113.250' } });
  expect(over.status()).toBe(429);
  expect(Number(over.headers()['retry-after'])).toBeGreaterThan(0);
  expect((await over.json()).error.code).toBe('rate_limited');
});
