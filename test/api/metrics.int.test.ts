/**
 * The metrics (server/metrics.ts; docs/contract.md §13.3) as the traffic of the real transport moves them:
 * requests counted by route template and status (never by raw path), appends and events, refusals
 * by a limit, open event-stream leases, and Node's own process metrics.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsText } from '@/server/metrics';
import { metricValue } from '../support/metrics';
import { startTestApp, type TestApp } from '../support/app';

const LIMIT = 40;
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: String(LIMIT) });
});
afterAll(async () => app?.close());

describe('metrics', () => {
  it('count requests by operation (the route template, never the raw path) and status, with their durations', async () => {
    const created = { operation: 'POST /work', status: '201' };
    const missing = { operation: 'GET /tasks/{id}', status: '404' };
    const [c0, m0, u0, d0] = await Promise.all([
      metricValue('aws_http_requests_total', created),
      metricValue('aws_http_requests_total', missing),
      metricValue('aws_http_requests_total', { operation: 'unmatched', status: '404' }),
      metricValue('aws_http_request_duration_seconds_count', { operation: 'POST /work' }),
    ]);
    expect((await app.request('POST', '/work', { body: { title: 'counted' } })).status).toBe(201);
    const id = randomUUID();
    expect((await app.request('GET', `/tasks/${id}`)).status).toBe(404);
    expect((await app.request('GET', '/no-such-route')).status).toBe(404);
    expect(await metricValue('aws_http_requests_total', created)).toBe(c0 + 1);
    expect(await metricValue('aws_http_requests_total', missing)).toBe(m0 + 1);
    expect(await metricValue('aws_http_requests_total', { operation: 'unmatched', status: '404' })).toBe(u0 + 1);
    expect(await metricValue('aws_http_request_duration_seconds_count', { operation: 'POST /work' })).toBe(d0 + 1);
    expect((await metricsText()).text).not.toContain(id);
  });

  it('count appends and the events they wrote', async () => {
    const [a0, e0] = await Promise.all([metricValue('aws_ledger_appends_total'), metricValue('aws_ledger_events_appended_total')]);
    expect((await app.request('POST', '/work', { body: { title: 'appended' } })).status).toBe(201);
    expect(await metricValue('aws_ledger_appends_total')).toBe(a0 + 1);
    expect(await metricValue('aws_ledger_events_appended_total')).toBeGreaterThanOrEqual(e0 + 1);
  });

  it('count refusals by the limit that refused, and show the open event-stream leases', async () => {
    const r0 = await metricValue('aws_refusals_total', { reason: 'api_rate_limit' });
    const other = await app.createWorkspace('metrics-limited');
    let refused = 0;
    // Windows are fixed minutes (server/rate-limits.ts): 45 requests that straddled a minute's end
    // could all pass (a CI run met it). 2 × LIMIT + 1 in well under a minute span at most two
    // windows, so one of them goes over.
    for (let i = 0; i < 2 * LIMIT + 1; i++) if ((await app.request('GET', '/workspace', { key: other.apiKey })).status === 429) refused++;
    expect(refused).toBeGreaterThan(0);
    expect(await metricValue('aws_refusals_total', { reason: 'api_rate_limit' })).toBe(r0 + refused);

    const open = new AbortController();
    const lease = await app.fetch(
      new Request('http://127.0.0.1/api/v1/events/stream?format=sse&lease_ms=60000', {
        headers: { authorization: `Bearer ${app.ws.apiKey}` },
        signal: open.signal,
      }),
    );
    expect(lease.status).toBe(200);
    expect(await metricValue('aws_event_stream_leases_open')).toBe(1);
    open.abort();
    await expect.poll(() => metricValue('aws_event_stream_leases_open'), { timeout: 5_000 }).toBe(0);
  });

  it('include Node’s own process metrics', async () => {
    const { text, contentType } = await metricsText();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  });
});
