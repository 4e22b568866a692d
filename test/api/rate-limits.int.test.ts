/**
 * Rate limits: per API key on the API, per client address on the public validator, counted in the
 * database so every instance shares them, and failing closed (503) when the validator's counters
 * cannot be kept. The clock is pinned one second into a window so no test straddles two windows.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { query } from '@/db';
import { sampleReceipt } from '@/server/domain/receipts/sample';
import { pruneRateLimitCounters, RATE_LIMIT_WINDOW_MS } from '@/server/rate-limits';
import { startTestApp, type ApiResponse, type TestApp } from '../support/app';
import { startDbProxy } from '../support/db-proxy';
import { testEngine } from '../support/engine';

/** A window start in the future of the real clock, so counters of earlier tests never collide. */
let windowStart = Math.ceil(Date.now() / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS;
function pinClock(msIntoWindow = 1000): number {
  windowStart += 10 * RATE_LIMIT_WINDOW_MS;
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(windowStart + msIntoWindow);
  return windowStart;
}
afterEach(() => {
  vi.useRealTimers();
});

function expectLimited(res: ApiResponse, limit: number, window: number): void {
  const retryAfter = Math.ceil((window + RATE_LIMIT_WINDOW_MS - Date.now()) / 1000);
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe(String(retryAfter));
  expect(res.headers.get('x-ratelimit-limit')).toBe(String(limit));
  expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  expect(res.headers.get('x-ratelimit-reset')).toBe(String((window + RATE_LIMIT_WINDOW_MS) / 1000));
  expect(res.body.error.retryAfter).toBe(retryAfter);
  expect(res.body.error.code).toBe('rate_limited');
}

describe('API rate limit (per key)', () => {
  const LIMIT = 3;
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_API_PER_MIN: String(LIMIT) });
  });
  afterAll(async () => {
    await app?.close();
  });

  it(`allows ${LIMIT} requests a minute per key, then 429 with Retry-After until the window ends`, async () => {
    const window = pinClock(1500);
    const ws = await app.createWorkspace();
    for (let i = 1; i <= LIMIT; i++) {
      const res = await app.request('GET', '/events/stream', { key: ws.apiKey });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - i));
      expect(res.headers.get('x-ratelimit-reset')).toBe(String((window + RATE_LIMIT_WINDOW_MS) / 1000));
    }
    // Over the limit a write changes nothing: no task, no event, no idempotency record.
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work', {
        key: ws.apiKey,
        body: { title: 'one too many' },
        headers: { 'idempotency-key': 'over-the-limit' },
      });
      expectLimited(res, LIMIT, window);
      expect(res.body.error.retryAfter).toBe(59);
    });
    // Another key has its own budget.
    expect((await app.request('GET', '/events/stream', { key: (await app.createWorkspace()).apiKey })).status).toBe(200);
    // The next window starts from zero, and the write goes through.
    vi.setSystemTime(window + RATE_LIMIT_WINDOW_MS);
    const next = await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'next minute' } });
    expect(next.status).toBe(201);
    expect(next.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 1));
  });

  it('counts the SSE stream and the receipt import like every other API-key request', async () => {
    const window = pinClock();
    const ws = await app.createWorkspace();
    for (let i = 0; i < LIMIT; i++) expect((await app.request('GET', '/events/stream', { key: ws.apiKey })).status).toBe(200);
    expectLimited(await app.request('GET', '/events/stream?format=sse&lease_ms=1', { key: ws.apiKey }), LIMIT, window);
    await app.expectUnchanged(async () => {
      expectLimited(await app.request('POST', '/agent-work-receipts/import', { key: ws.apiKey, body: sampleReceipt() }), LIMIT, window);
    });
    // Below the limit both carry the headers too.
    vi.setSystemTime(window + RATE_LIMIT_WINDOW_MS);
    const imported = await app.request('POST', '/agent-work-receipts/import', { key: ws.apiKey, body: sampleReceipt() });
    expect(imported.status).toBe(201);
    expect(imported.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 1));
    const sse = await app.fetch(
      new Request('http://127.0.0.1:3000/api/v1/events/stream?format=sse&lease_ms=1', {
        headers: { authorization: `Bearer ${ws.apiKey}` },
      }),
    );
    expect(sse.status).toBe(200);
    expect(sse.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 2));
    // The lease's clock is the pinned one, so it would never end: close it from this side.
    await sse.body?.cancel();
  });

  it('counts a key before its body is read: bad bodies and unknown routes count, and over the limit the body is never read', async () => {
    const window = pinClock();
    const ws = await app.createWorkspace();
    const bad = await app.request('POST', '/work', {
      key: ws.apiKey,
      rawBody: '{"title":',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 1));
    const nowhere = await app.fetch(
      new Request('http://127.0.0.1:3000/api/v1/no-such-route', { headers: { authorization: `Bearer ${ws.apiKey}` } }),
    );
    expect(nowhere.status).toBe(404);
    expect(nowhere.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 2));
    expect((await app.request('GET', '/events/stream', { key: ws.apiKey })).status).toBe(200);
    // Over the limit: 429 before the (oversized) body is looked at, and HEAD carries the same headers.
    const big = 'x'.repeat(app.runtime.env.API_BODY_LIMIT_BYTES + 1);
    expectLimited(
      await app.request('POST', '/work', { key: ws.apiKey, rawBody: big, headers: { 'content-type': 'application/json' } }),
      LIMIT,
      window,
    );
    const head = await app.fetch(
      new Request('http://127.0.0.1:3000/api/v1/events/stream', { method: 'HEAD', headers: { authorization: `Bearer ${ws.apiKey}` } }),
    );
    expect(head.status).toBe(429);
    expect(head.headers.get('retry-after')).toBe(String(Math.ceil((window + RATE_LIMIT_WINDOW_MS - Date.now()) / 1000)));
    expect(head.headers.get('x-ratelimit-remaining')).toBe('0');
    // A key over its limit is refused on session-only operations too (it was counted first).
    const approve = await app.request('POST', `/decisions/${randomUUID()}/approve`, { key: ws.apiKey, body: {} });
    expectLimited(approve, LIMIT, window);
  });

  it('an unknown key is 401 and counts nowhere; a signed-in human is not limited by key', async () => {
    pinClock();
    const unknown = `awk_${'A'.repeat(43)}`;
    const counters = async () =>
      Number((await query<{ n: string }>(app.runtime.db, sql`select count(*) as n from rate_limit_counters`))[0]!.n);
    const before = await counters();
    for (let i = 0; i <= LIMIT; i++) expect((await app.request('GET', '/events/stream', { key: unknown })).status).toBe(401);
    expect(await counters()).toBe(before);
    const human = await app.member('owner');
    for (let i = 0; i <= LIMIT; i++) {
      const res = await app.request('GET', '/decisions', { session: human.session });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });
});

describe('API rate limit under concurrent requests (keys looked up in batches)', () => {
  const LIMIT = 20;
  const BURST = 40;
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_API_PER_MIN: String(LIMIT) });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('counts every request of a burst exactly, each its own count, in fewer statements than requests', async () => {
    pinClock();
    // A transaction that writes takes a transaction id: the key lookups are the burst's only writes.
    // Transaction ids are the whole server's, and other test files write to their own databases
    // meanwhile (a bulk fill on the other worker writes for seconds): their transactions can only
    // add to the count, so the burst is sent again (a new key each time) until one shows the
    // batching or 30 seconds have passed, and the fewest transactions seen is the one compared.
    const xid = async () => Number((await query<{ x: string }>(app.runtime.db, sql`select txid_current()::text as x`))[0]!.x);
    let fewest = Infinity;
    const until = performance.now() + 30_000; // (Date is pinned here)
    for (let attempt = 0; !(fewest <= BURST / 2) && (attempt < 3 || performance.now() < until); attempt++) {
      if (attempt >= 3) await new Promise((r) => setTimeout(r, 500));
      const ws = await app.createWorkspace();
      await app.request('GET', '/events/stream', { key: ws.apiKey }); // the key's last_used_at is written once, here
      const before = await xid();
      const answers = await Promise.all(Array.from({ length: BURST }, () => app.request('GET', '/events/stream', { key: ws.apiKey })));
      fewest = Math.min(fewest, (await xid()) - before - 1);

      const passed = answers.filter((a) => a.status === 200);
      expect(passed).toHaveLength(LIMIT - 1);
      expect(answers.filter((a) => a.status === 429)).toHaveLength(BURST - (LIMIT - 1));
      // Each request saw the count it would have had alone: LIMIT - 2 … 0 left, each once.
      const remaining = passed.map((a) => Number(a.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b);
      expect(remaining).toEqual(Array.from({ length: LIMIT - 1 }, (_, i) => i));
      const [counter] = await query<{ hits: number }>(
        app.runtime.db,
        sql`select hits from rate_limit_counters where bucket = ${`api_key:${ws.apiKeyId}`}`,
      );
      expect(counter!.hits).toBe(BURST + 1);
      // (PGlite runs a statement without yielding to the event loop, so no request arrives while
      // one is in flight: each is looked up alone, and there is nothing to compare.)
      if (testEngine() !== 'postgres') break;
    }
    // One statement a request would be BURST transactions.
    expect(fewest).toBeGreaterThan(0);
    if (testEngine() === 'postgres') expect(fewest).toBeLessThanOrEqual(BURST / 2);
  });
});

describe('public validator rate limit (per client address)', () => {
  const LIMIT = 3;
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_VALIDATOR_PER_MIN: String(LIMIT) });
  });
  afterAll(async () => {
    await app?.close();
  });

  const from = (address: string) => ({ key: null, headers: { 'x-forwarded-for': address } });
  const validate = (address: string) => app.request('POST', '/agent-work-receipts/validate', { ...from(address), body: sampleReceipt() });

  it('metadata, schema and validation share one budget per address; past it 429 in each one’s shape', async () => {
    const window = pinClock();
    const a = '203.0.113.7';
    expect((await app.request('GET', '/agent-work-receipts/validate', from(a))).status).toBe(200);
    expect((await app.request('GET', '/agent-work-receipts/schema', from(a))).status).toBe(200);
    const third = await validate(a);
    expect(third.status).toBe(200);
    expect(third.body.valid).toBe(true);
    expect(third.headers.get('x-ratelimit-remaining')).toBe('0');

    // POST answers in the validator's own shape, with retryAfter beside the code.
    const over = await validate(a);
    expect(over.body).toMatchObject({ ok: false, valid: false, error: { code: 'rate_limited', issues: [] } });
    expectLimited(over, LIMIT, window);
    // The GETs answer with the API's error envelope.
    const meta = await app.request('GET', '/agent-work-receipts/validate', from(a));
    expectLimited(meta, LIMIT, window);
    expect(meta.body.error.requestId).toBe(meta.headers.get('x-request-id'));
    expectLimited(await app.request('GET', '/agent-work-receipts/schema', from(a)), LIMIT, window);

    // The path's case does not open another budget.
    for (const path of ['/Agent-Work-Receipts/SCHEMA', '/AGENT-WORK-RECEIPTS/validate/']) {
      // (Outside the document's spelling, so sent without the suite's contract check.)
      const res = await app.fetch(new Request(`http://127.0.0.1:3000/api/v1${path}`, { headers: { 'x-forwarded-for': a } }));
      expect(res.status).toBe(429);
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    }
    // Another address has its own budget; an address written left of the real one changes nothing.
    expect((await validate('203.0.113.8')).status).toBe(200);
    expectLimited(await validate(`198.51.100.1, ${a}`), LIMIT, window);
    // API keys and the validator are separate budgets.
    expect((await app.request('GET', '/events/stream')).status).toBe(200);

    vi.setSystemTime(window + RATE_LIMIT_WINDOW_MS + 1);
    expect((await validate(a)).status).toBe(200);
  });

  it('fails closed: when the counters cannot be written the validator answers 503, never an unlimited pass', async () => {
    pinClock();
    const a = '203.0.113.20';
    expect((await validate(a)).status).toBe(200);
    await app.runtime.db.execute(sql`alter table rate_limit_counters rename to rate_limit_counters_away`);
    try {
      for (let i = 0; i <= LIMIT; i++) {
        const res = await validate(`203.0.113.${30 + i}`);
        expect(res.status).toBe(503);
        expect(res.body).toMatchObject({ ok: false, valid: false, error: { code: 'service_unavailable', retryAfter: 1 } });
        expect(res.headers.get('retry-after')).toBe('1');
      }
      const meta = await app.request('GET', '/agent-work-receipts/validate', from(a));
      expect(meta.status).toBe(503);
      expect(meta.body.error.code).toBe('service_unavailable');
      expect(meta.headers.get('retry-after')).toBe('1');
    } finally {
      await app.runtime.db.execute(sql`alter table rate_limit_counters_away rename to rate_limit_counters`);
    }
    const back = await validate(a);
    expect(back.status).toBe(200);
    expect(back.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 2));
  });
});

describe('rate-limit windows', () => {
  it('ended windows are pruned; the current one is kept', async () => {
    const app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100' });
    try {
      const window = pinClock();
      for (const minute of [0, 1, 2]) {
        vi.setSystemTime(window + minute * RATE_LIMIT_WINDOW_MS);
        await app.request('GET', '/events/stream');
      }
      const buckets = () =>
        query<{ window_start: string }>(app.runtime.db, sql`select window_start::text from rate_limit_counters order by window_start`);
      expect(await buckets()).toHaveLength(3);
      // The current window and the one before it are kept (a slower clock may still count there).
      expect(await pruneRateLimitCounters(app.runtime.db)).toBe(1);
      expect(await buckets()).toHaveLength(2);
      expect(await pruneRateLimitCounters(app.runtime.db)).toBe(0);
    } finally {
      await app.close();
    }
  });
});

if (testEngine() === 'postgres') {
  describe('rate limits across instances (PostgreSQL)', () => {
    it('two instances on one database share every counter', async () => {
      const LIMIT = 4;
      const env = { RATE_LIMIT_API_PER_MIN: String(LIMIT), RATE_LIMIT_VALIDATOR_PER_MIN: String(LIMIT) };
      const one = await startTestApp(env);
      const two = await startTestApp(env, { via: () => one.runtime.databaseUrl!, primaryName: 'second-instance' });
      try {
        const window = pinClock();
        const instances = [one, two, one, two];
        for (const instance of instances) {
          expect((await instance.request('GET', '/events/stream', { key: one.ws.apiKey })).status).toBe(200);
          expect(
            (
              await instance.request('GET', '/agent-work-receipts/schema', {
                key: null,
                headers: { 'x-forwarded-for': '192.0.2.44' },
              })
            ).status,
          ).toBe(200);
        }
        for (const instance of [one, two]) {
          expectLimited(await instance.request('GET', '/events/stream', { key: one.ws.apiKey }), LIMIT, window);
          expectLimited(
            await instance.request('GET', '/agent-work-receipts/schema', { key: null, headers: { 'x-forwarded-for': '192.0.2.44' } }),
            LIMIT,
            window,
          );
        }
      } finally {
        await two.close();
        await one.close();
      }
    });

    it('with the database gone the validator answers 503 (no unlimited pass) and recovers without a restart', async () => {
      const proxy = await startDbProxy();
      const app = await startTestApp({ RATE_LIMIT_VALIDATOR_PER_MIN: '5' }, { via: proxy.via });
      const validate = () =>
        app.request('POST', '/agent-work-receipts/validate', {
          key: null,
          headers: { 'x-forwarded-for': '192.0.2.9' },
          body: sampleReceipt(),
        });
      try {
        pinClock();
        expect((await validate()).status).toBe(200);
        await proxy.down();
        for (let i = 0; i < 8; i++) {
          const res = await validate();
          expect(res.status).toBe(503);
          expect(res.body.error.code).toBe('service_unavailable');
          expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
        }
        // An API-key request needs the same store: 503 too.
        const api = await app.request('GET', '/events/stream');
        expect(api.status).toBe(503);
        await proxy.up();
        const back = await validate();
        expect(back.status).toBe(200);
        expect(back.headers.get('x-ratelimit-remaining')).toBe('3');
      } finally {
        await app.close();
        await proxy.close();
      }
    });
  });
}
