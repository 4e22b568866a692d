/**
 * Webhook delivery across instances (PostgreSQL: several processes on one database). Two
 * instances deliver each event once, in order; an instance killed mid-delivery loses nothing,
 * since its lease runs out and another sends the event again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '@/server/runtime';
import { parseEnv } from '@/server/env';
import { WebhookDispatcher } from '@/server/webhooks/dispatcher';
import { startTestApp, type TestApp } from '../support/app';
import { receiverPool } from '../support/receiver';

const SETTINGS = {
  WEBHOOKS_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_BASE_MS: '40',
  WEBHOOK_LEASE_MS: '1500',
  WEBHOOK_TIMEOUT_MS: '1000',
  RATE_LIMIT_API_PER_MIN: '100000',
};

let app: TestApp;
const receivers = receiverPool();
beforeAll(async () => {
  app = await startTestApp(SETTINGS);
});
afterAll(async () => {
  await receivers.closeAll();
  await app?.close();
});

const receiver = () => receivers.start();

/** Another instance in this process: its own runtime (pool, LISTEN connection) and dispatcher. */
async function instance(): Promise<{ runtime: Runtime; dispatcher: WebhookDispatcher; stop(): Promise<void> }> {
  const runtime = await createRuntime(
    parseEnv({ NODE_ENV: 'test', DATABASE_URL: app.runtime.databaseUrl, SEED_DEMO: 'false', ...SETTINGS }),
  );
  const dispatcher = new WebhookDispatcher(runtime, { pollMs: 50 });
  dispatcher.start();
  return {
    runtime,
    dispatcher,
    async stop() {
      await dispatcher.stop();
      await runtime.close();
    },
  };
}

/** An instance as its own process (test/support/webhook-instance.ts), to be killed. */
async function processInstance(): Promise<ChildProcess> {
  const root = path.resolve(import.meta.dirname, '../..');
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/webhook-instance.ts'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: app.runtime.databaseUrl, SEED_DEMO: 'false', LOG_LEVEL: 'silent', ...SETTINGS },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`instance exited with ${code} before it was ready`)));
  });
  return child;
}

async function createTasks(apiKey: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await app.request('POST', '/work', { key: apiKey, body: { title: `Task ${i}` } });
    expect(res.status).toBe(201);
  }
}

describe('several instances', () => {
  it('deliver each event once, in sequence order', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    // A receiver a little slow, so both instances are busy when events arrive.
    r.answer = () => ({ status: 200, delayMs: 5 });
    const created = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: r.url, event_types: ['work.created'] } });
    const a = await instance();
    const b = await instance();
    try {
      await createTasks(ws.apiKey, 40);
      const got = await r.waitFor(40, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(r.received).toHaveLength(40);
      const sequences = got.map((g) => (new Webhook(created.body.data.secret).verify(g.body, g.headers) as { sequence: number }).sequence);
      expect(sequences).toEqual([...sequences].sort((x, y) => x - y));
      expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(40);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('lose nothing when one is killed mid-delivery: another sends the event again once the lease runs out', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    // The first request is never answered: the instance delivering it is killed while it waits.
    r.answer = (_req, n) => (n === 0 ? { status: 200, delayMs: Infinity } : { status: 200 });
    const created = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: r.url, event_types: ['work.created'] } });
    const doomed = await processInstance();
    let survivor: Awaited<ReturnType<typeof instance>> | undefined;
    try {
      await createTasks(ws.apiKey, 3);
      const [first] = await r.waitFor(1);
      doomed.kill('SIGKILL');
      await once(doomed, 'exit');
      survivor = await instance();
      const got = await r.waitFor(4, 15_000);
      const verifier = new Webhook(created.body.data.secret);
      const sequences = got.map((g) => (verifier.verify(g.body, g.headers) as { sequence: number }).sequence);
      // The first event twice (the second time by the survivor, same webhook-id), then the other two.
      expect(got[1]!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(sequences.slice(1)).toEqual([...sequences.slice(1)].sort((x, y) => x - y));
      expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(3);
      // The survivor records the last delivery after its receiver answered, so a moment after it arrived.
      await expect
        .poll(
          async () =>
            (await app.request('GET', `/webhooks/${created.body.data.id}`, { key: ws.apiKey })).body.data.delivery.delivered_sequence,
          {
            timeout: 5_000,
          },
        )
        .toBe(sequences.at(-1));
    } finally {
      if (doomed.exitCode === null) doomed.kill('SIGKILL');
      await survivor?.stop();
    }
  });
});
