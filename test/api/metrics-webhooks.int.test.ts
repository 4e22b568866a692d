/**
 * The webhook metrics (docs/contract.md §13.3): delivery attempts by outcome, and the age of the oldest
 * undelivered event for each endpoint behind (only those: the label set stays bounded), read from
 * the database at each scrape; and a job's last success.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startBackgroundJobs } from '@/server/jobs';
import { metricSample } from '../support/metrics';
import { startTestApp, type TestApp } from '../support/app';
import { receiverPool } from '../support/receiver';

let app: TestApp;
let stopJobs: () => Promise<void>;
const receivers = receiverPool();
beforeAll(async () => {
  app = await startTestApp({
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_BASE_MS: '40',
    WEBHOOK_TIMEOUT_MS: '400',
    WEBHOOK_POLL_MS: '50',
  });
  stopJobs = startBackgroundJobs(app.runtime, { sweepMs: 50, retentionMs: 50 });
});
afterAll(async () => {
  await stopJobs?.();
  await receivers.closeAll();
  await app?.close();
});

it('counts deliveries by outcome, shows how far behind a failing endpoint is, and forgets it once it has caught up', async () => {
  const receiver = await receivers.start();
  let failing = true;
  receiver.answer = () => ({ status: failing ? 500 : 204 });
  const created = await app.request('POST', '/webhooks', { body: { url: `${receiver.url}/hook` } });
  expect(created.status).toBe(201);
  const endpointId = created.body.data.id as string;
  const [ok0, failed0] = [
    (await metricSample('aws_webhook_deliveries_total', { outcome: 'succeeded' })) ?? 0,
    (await metricSample('aws_webhook_deliveries_total', { outcome: 'failed' })) ?? 0,
  ];

  expect((await app.request('POST', '/work', { body: { title: 'to deliver' } })).status).toBe(201);
  await receiver.waitFor(2);
  // Counted once the answer is in (the receiver sees the request before that).
  await expect
    .poll(() => metricSample('aws_webhook_deliveries_total', { outcome: 'failed' }), { timeout: 5_000 })
    .toBeGreaterThanOrEqual(failed0 + 2);
  // Behind, by the age of its oldest undelivered event, which only grows while it fails.
  const first = (await metricSample('aws_webhook_delivery_lag_seconds', { endpoint: endpointId }))!;
  expect(first).toBeGreaterThanOrEqual(0);
  await new Promise((r) => setTimeout(r, 300));
  expect(await metricSample('aws_webhook_delivery_lag_seconds', { endpoint: endpointId })).toBeGreaterThan(first);

  failing = false;
  await expect.poll(() => metricSample('aws_webhook_delivery_lag_seconds', { endpoint: endpointId }), { timeout: 10_000 }).toBeUndefined();
  expect(await metricSample('aws_webhook_deliveries_total', { outcome: 'succeeded' })).toBeGreaterThan(ok0);
  // The jobs ran, and said so.
  await expect
    .poll(async () => (await metricSample('aws_job_last_success_timestamp_seconds', { job: 'webhook dispatch' })) ?? 0, { timeout: 5_000 })
    .toBeGreaterThan(Date.now() / 1000 - 60);
  expect(await metricSample('aws_job_last_success_timestamp_seconds', { job: 'decision timeout sweep' })).toBeGreaterThan(
    Date.now() / 1000 - 60,
  );
});
