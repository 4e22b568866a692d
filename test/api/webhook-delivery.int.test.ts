/**
 * Webhook delivery (both engines): a real receiver on 127.0.0.1 and the dispatcher the service
 * runs. Events arrive once per success, in sequence order, exactly as GET /events/stream serves
 * them, signed so that the standardwebhooks package verifies them; failures are retried and
 * listed; redirects are not followed; a receiver that stays down gets the endpoint disabled.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEvents, webhookDeliveries } from '@/db/schema';
import { pruneDeliveries } from '@/server/domain/webhooks/endpoints';
import { WebhookDispatcher } from '@/server/webhooks/dispatcher';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { receiverPool } from '../support/receiver';

const FAST = {
  WEBHOOKS_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_BASE_MS: '40',
  WEBHOOK_TIMEOUT_MS: '400',
  // Fast tests, no rate limit in the way.
  RATE_LIMIT_API_PER_MIN: '100000',
};

let app: TestApp;
let dispatcher: WebhookDispatcher;
const receivers = receiverPool();
beforeAll(async () => {
  app = await startTestApp(FAST);
  dispatcher = new WebhookDispatcher(app.runtime, { pollMs: 50 });
  dispatcher.start();
});
afterAll(async () => {
  await dispatcher?.stop();
  await receivers.closeAll();
  await app?.close();
});

const receiver = () => receivers.start();

async function endpoint(ws: TestWorkspace, url: string, eventTypes?: string[]) {
  const res = await app.request('POST', '/webhooks', {
    key: ws.apiKey,
    body: { url, ...(eventTypes ? { event_types: eventTypes } : {}) },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: string; secret: string };
}

async function createTasks(ws: TestWorkspace, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await app.request('POST', '/work', { key: ws.apiKey, body: { title: `Task ${i}` } });
    expect(res.status).toBe(201);
  }
}

describe('delivery', () => {
  it('sends each subscribed event once, in order, as the event stream serves it, signed per Standard Webhooks', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    const all = await endpoint(ws, `${r.url}/all`);
    const r2 = await receiver();
    const decisionsOnly = await endpoint(ws, `${r2.url}/decisions`, ['decision.*']);
    await createTasks(ws, 5);
    const raised = await app.request('POST', '/decisions', {
      key: ws.apiKey,
      body: { workspace_id: ws.workspaceId, title: 'Ship it?' },
    });
    expect(raised.status).toBe(201);

    // Everything after the endpoints' creation: the second endpoint's creation, 5 tasks' events, the decision's.
    const expected = await app.runtime.db
      .select()
      .from(ledgerEvents)
      .where(eq(ledgerEvents.workspaceId, ws.workspaceId))
      .orderBy(asc(ledgerEvents.sequence));
    const after = expected.filter((e) => e.sequence > expected.find((x) => x.aggregateId === all.id)!.sequence);
    const got = await r.waitFor(after.length);
    await new Promise((resolve) => setTimeout(resolve, 300)); // nothing more comes
    expect(r.received).toHaveLength(after.length);

    const stream = await app.request('GET', `/events/stream?limit=100`, { key: ws.apiKey });
    const served = new Map((stream.body.data as { id: string }[]).map((e) => [e.id, e]));
    const verifier = new Webhook(all.secret);
    let previousHash: string | null = null;
    for (const [i, delivery] of got.entries()) {
      const payload = verifier.verify(delivery.body, delivery.headers) as {
        id: string;
        sequence: number;
        previousHash: string;
        eventHash: string;
      };
      expect(delivery.headers['webhook-id']).toBe(payload.id);
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(payload.sequence).toBe(after[i]!.sequence);
      expect(payload).toEqual(served.get(payload.id));
      if (previousHash) expect(payload.previousHash).toBe(previousHash);
      previousHash = payload.eventHash;
    }

    const decisionEvents = after.filter((e) => e.eventType.startsWith('decision.'));
    const onlyDecisions = await r2.waitFor(decisionEvents.length);
    expect(onlyDecisions.map((d) => JSON.parse(d.body).eventType)).toEqual(decisionEvents.map((e) => e.eventType));
    expect(() => new Webhook(all.secret).verify(onlyDecisions[0]!.body, onlyDecisions[0]!.headers)).toThrow();
    new Webhook(decisionsOnly.secret).verify(onlyDecisions[0]!.body, onlyDecisions[0]!.headers);

    const deliveries = await app.request('GET', `/webhooks/${all.id}/deliveries?limit=100`, { key: ws.apiKey });
    expect(deliveries.body.data).toHaveLength(after.length);
    expect(deliveries.body.data.every((d: { succeeded: boolean; attempt: number }) => d.succeeded && d.attempt === 1)).toBe(true);
    const state = await app.request('GET', `/webhooks/${all.id}`, { key: ws.apiKey });
    expect(state.body.data.delivery).toMatchObject({ delivered_sequence: after.at(-1)!.sequence, attempts: 0, failing_since: null });
  });

  it('retries a receiver that fails: the fourth attempt delivers, and the deliveries list shows all four', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    r.answer = (_req, n) => (n < 3 ? { status: 500, body: `down ${n + 1}` } : { status: 200, body: 'ok' });
    const { id } = await endpoint(ws, r.url, ['work.created']);
    await createTasks(ws, 1);
    const got = await r.waitFor(4);
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    for (let i = 1; i < 4; i++) expect(got[i]!.at).toBeGreaterThan(got[i - 1]!.at);

    await expect.poll(async () => (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data.length).toBe(4);
    const list = (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data;
    expect(list.map((d: { attempt: number }) => d.attempt)).toEqual([4, 3, 2, 1]);
    expect(list.map((d: { status_code: number }) => d.status_code)).toEqual([200, 500, 500, 500]);
    expect(list.map((d: { succeeded: boolean }) => d.succeeded)).toEqual([true, false, false, false]);
    expect(list[1].response_excerpt).toBe('down 3');
    for (const failed of list.slice(1)) expect(Date.parse(failed.next_attempt_at)).toBeGreaterThan(Date.parse(failed.attempted_at));
    expect(list[0].next_attempt_at).toBeNull();

    // Pages of one.
    const first = await app.request('GET', `/webhooks/${id}/deliveries?limit=1`, { key: ws.apiKey });
    const second = await app.request('GET', `/webhooks/${id}/deliveries?limit=1&cursor=${first.body.meta.nextCursor}`, { key: ws.apiKey });
    expect(second.body.data[0].attempt).toBe(3);
  });

  it('does not follow a redirect: a 3xx is a failure, and the other address hears nothing', async () => {
    const ws = await app.createWorkspace();
    const elsewhere = await receiver();
    const r = await receiver();
    r.answer = () => ({ status: 307, headers: { location: `${elsewhere.url}/stolen` } });
    const { id } = await endpoint(ws, r.url, ['work.created']);
    await createTasks(ws, 1);
    await r.waitFor(2);
    expect(elsewhere.received).toHaveLength(0);
    const list = (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data;
    expect(list.at(-1)).toMatchObject({ succeeded: false, status_code: 307, error: 'HTTP 307' });
  });

  it('counts no answer within the timeout as a failure', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    r.answer = (_req, n) => (n === 0 ? { status: 200, delayMs: 2_000 } : { status: 200 });
    const { id } = await endpoint(ws, r.url, ['work.created']);
    await createTasks(ws, 1);
    await r.waitFor(2);
    await expect.poll(async () => (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data.length).toBe(2);
    const list = (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data;
    expect(list[1]).toMatchObject({ attempt: 1, succeeded: false, status_code: null, error: 'No complete answer within 400 ms.' });
    expect(list[0]).toMatchObject({ attempt: 2, succeeded: true });
  });

  it('sends a test event to the endpoint asked, whatever it subscribes to, and to no other', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    const { id, secret } = await endpoint(ws, r.url, ['decision.approved']);
    // Even an endpoint subscribed to every event does not get another endpoint's test.
    const other = await receiver();
    await endpoint(ws, other.url, ['*']);
    const res = await app.request('POST', `/webhooks/${id}/test`, { key: ws.apiKey });
    const [got] = await r.waitFor(1);
    const event = new Webhook(secret).verify(got!.body, got!.headers) as { id: string; eventType: string };
    expect(event).toMatchObject({ id: res.body.data.event_id, eventType: 'webhook_endpoint.test' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(other.received).toHaveLength(0);
  });

  it('signs with both secrets after a rotation, so either verifies', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    const { id, secret: old } = await endpoint(ws, r.url, ['work.created']);
    const rotated = await app.request('POST', `/webhooks/${id}/rotate-secret`, { key: ws.apiKey });
    await createTasks(ws, 1);
    const [got] = await r.waitFor(1);
    expect(got!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    new Webhook(old).verify(got!.body, got!.headers);
    new Webhook(rotated.body.data.secret).verify(got!.body, got!.headers);
  });
});

describe('delivery attempts', () => {
  it('are kept 30 days, then pruned', async () => {
    const ws = await app.createWorkspace();
    const r = await receiver();
    const { id } = await endpoint(ws, r.url, ['work.created']);
    await createTasks(ws, 2);
    await expect.poll(async () => (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data.length).toBe(2);
    const [older] = (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data.slice(-1);
    await app.runtime.db
      .update(webhookDeliveries)
      .set({ createdAt: new Date(Date.now() - 31 * 86_400_000) })
      .where(eq(webhookDeliveries.id, older.id));
    await pruneDeliveries(app.runtime.db, 30);
    const left = (await app.request('GET', `/webhooks/${id}/deliveries`, { key: ws.apiKey })).body.data;
    expect(left.map((d: { id: string }) => d.id)).not.toContain(older.id);
    expect(left).toHaveLength(1);
  });
});

describe('a receiver that stays down', () => {
  it('gets its endpoint disabled once the retry window has passed, recorded as webhook_endpoint.disabled; enabling resumes at that event', async () => {
    const shortWindow = await startTestApp({ ...FAST, WEBHOOK_RETRY_FOR_MS: '1000' }, { primaryName: 'short-window' });
    const ownDispatcher = new WebhookDispatcher(shortWindow.runtime, { pollMs: 50 });
    ownDispatcher.start();
    try {
      const r = await receiver();
      let up = false;
      r.answer = () => (up ? { status: 200 } : { status: 503 });
      const res = await shortWindow.request('POST', '/webhooks', { body: { url: r.url, event_types: ['work.created'] } });
      const id = res.body.data.id;
      const task = await shortWindow.request('POST', '/work', { body: { title: 'Nobody hears this yet' } });
      await expect
        .poll(async () => (await shortWindow.request('GET', `/webhooks/${id}`)).body.data.status, { timeout: 10_000 })
        .toBe('disabled');
      const endpoint = (await shortWindow.request('GET', `/webhooks/${id}`)).body.data;
      expect(endpoint.disabled_reason).toMatch(/^Disabled after \d+ failed attempts? over \d+ minutes? at event /);
      const [disabled] = await shortWindow.runtime.db
        .select()
        .from(ledgerEvents)
        .where(eq(ledgerEvents.eventType, 'webhook_endpoint.disabled'));
      expect(disabled).toMatchObject({ aggregateId: id, actorType: 'system' });
      expect(JSON.parse(disabled!.payloadText!)).toMatchObject({ id, by: 'system', event_id: expect.any(String) });
      const attempts = r.received.length;
      expect(attempts).toBeGreaterThanOrEqual(2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(r.received).toHaveLength(attempts); // nothing more while disabled

      up = true;
      const enabled = await shortWindow.request('PATCH', `/webhooks/${id}`, { body: { enabled: true } });
      expect(enabled.body.data.status).toBe('enabled');
      const got = await r.waitFor(attempts + 1);
      expect(JSON.parse(got.at(-1)!.body)).toMatchObject({ eventType: 'work.created', aggregateId: task.body.data.task.id });
    } finally {
      await ownDispatcher.stop();
      await shortWindow.close();
    }
  });
});

describe('the receiver docs/agents.md shows', () => {
  /** The ```js block after `<!-- webhook receiver -->` in docs/agents.md, as a reader copies it. */
  function readmeReceiver(): string {
    const guide = readFileSync(path.resolve(import.meta.dirname, '../../docs/agents.md'), 'utf8');
    const match = /<!-- webhook receiver -->\s*```js\n([\s\S]*?)```/.exec(guide);
    expect(match, 'docs/agents.md shows a receiver').not.toBeNull();
    return match![1]!;
  }

  async function freePort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }

  /** Runs the guide's receiver on `port` with `secret`; resolves once it answers (an unsigned request: 400). */
  async function startReadmeReceiver(port: number, secret: string) {
    const url = `http://127.0.0.1:${port}/`;
    // Run from the repository, so that `standardwebhooks` resolves as it does in a reader's project.
    const child = spawn(process.execPath, ['--input-type=module', '-e', readmeReceiver()], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const receiver = { url, child, out: '' };
    child.stdout.setEncoding('utf8').on('data', (c: string) => (receiver.out += c));
    await expect
      .poll(
        async () =>
          fetch(url, { method: 'POST', body: '{}' }).then(
            (r) => r.status,
            () => 0,
          ),
        { timeout: 10_000 },
      )
      .toBe(400); // listening, and an unsigned request is refused
    return receiver;
  }

  it('refuses a 64 MiB body, declared or chunked, without reading it, and goes on answering', async () => {
    const receiver = await startReadmeReceiver(await freePort(), 'whsec_' + Buffer.alloc(32, 7).toString('base64'));
    try {
      for (const declared of [true, false]) {
        let sent = 0;
        const piece = Buffer.alloc(64 * 1024, 0x78);
        const body = (async function* () {
          for (let i = 0; i < 1024; i++) {
            sent += piece.length;
            yield piece;
          }
        })();
        const status = await undiciRequest(receiver.url, {
          method: 'POST',
          headers: declared ? { 'content-length': String(64 * 1024 * 1024) } : {},
          body: body as never,
        }).then(
          async (r) => (await r.body.dump(), r.statusCode),
          () => 0, // cut off while still sending
        );
        expect([0, 413]).toContain(status);
        expect(sent).toBeLessThan(32 * 1024 * 1024);
      }
      expect((await fetch(receiver.url, { method: 'POST', body: '{}' })).status).toBe(400);
    } finally {
      receiver.child.kill();
    }
  });

  it('verifies a real delivery, prints it once, and refuses a forged one', async () => {
    const ws = await app.createWorkspace();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/`;
    const created = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url, event_types: ['work.created'] } });
    const receiver = await startReadmeReceiver(port, created.body.data.secret);
    try {
      const work = await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'Heard by the README' } });
      await expect
        .poll(() => receiver.out, { timeout: 10_000 })
        .toMatch(new RegExp(`^\\d+ work.created ${work.body.data.taskId} sha256:[0-9a-f]{64}$`, 'm'));
      const list = (await app.request('GET', `/webhooks/${created.body.data.id}/deliveries`, { key: ws.apiKey })).body.data;
      expect(list[0]).toMatchObject({ succeeded: true, status_code: 204 });
      expect(receiver.out.trim().split('\n')).toHaveLength(1);
    } finally {
      receiver.child.kill();
    }
  });
});
