/**
 * `npm start` as a newcomer runs it: the real launcher on an empty embedded database, its banner
 * read for the URL, the demo key and the owner's password. APP_URL is left to its default
 * (http://localhost:PORT) while the server listens on 127.0.0.1, as on a fresh laptop, so the
 * app is reached by two addresses; a human rules from either. And it stops on Ctrl-C or SIGTERM,
 * whichever of its processes gets it, finishing what is in flight.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { freePort, npmStart, signInAt, type Started } from './npm-start';

/** The processes of the launcher's group: npm, its shell (if any), start.mjs, serve.mjs. */
function groupPids(started: Started): { pid: number; cmd: string }[] {
  let text: string;
  try {
    text = execFileSync('ps', ['-o', 'pid=,args=', '-g', String(started.npm.pid)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when the group is empty
  }
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [pid, ...cmd] = line.trim().split(/\s+/);
      return { pid: Number(pid), cmd: cmd.join(' ') };
    });
}

async function api(s: Started, method: string, url: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${s.port}/api/v1${url}`, {
    method,
    headers: { Authorization: `Bearer ${s.apiKey}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function raise(s: Started, title: string): Promise<string> {
  const created = await api(s, 'POST', '/decisions', { workspace_id: s.workspaceId, title });
  expect(created.status).toBe(201);
  return created.body.decision.id;
}

test.describe.configure({ mode: 'serial' });
test.setTimeout(120_000);

test.describe('a newcomer’s npm start', () => {
  let dataDir: string;
  let s: Started;
  test.beforeAll(async () => {
    test.setTimeout(120_000);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'aws-npm-start-'));
    s = await npmStart(path.join(dataDir, 'pglite'));
  });
  test.afterAll(async () => {
    if (s && s.npm.exitCode === null) {
      process.kill(-s.npm.pid!, 'SIGKILL');
      await s.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('the banner names one address to open, and the demo’s key and owner', async () => {
    expect(s.url).toBe(`http://localhost:${s.port}`);
    // One URL to open: every http address printed is that one (sign-in, API examples).
    const printed = new Set([...s.output().matchAll(/https?:\/\/[^\s/"']+/g)].map((m) => m[0]));
    expect([...printed]).toEqual([s.url]);
    expect(s.apiKey).toMatch(/^awk_/);
    expect(s.owner.email).toBe('owner@demo.local');
    expect(s.owner.password.length).toBeGreaterThan(8);
  });

  for (const host of ['127.0.0.1', 'localhost']) {
    test(`the owner signs in and rules at http://${host}`, async ({ browser }) => {
      const origin = `http://${host}:${s.port}`;
      const id = await raise(s, `Ruled from ${host}`);
      const { context, page } = await signInAt(browser, origin, s);
      await page.goto(`/decisions/${id}`);
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await page.getByRole('button', { name: 'Confirm approve' }).click();
      await expect(page.getByRole('status')).toContainText('Approved');
      expect((await api(s, 'GET', `/decisions/${id}`)).body.decision.status).toBe('approved');
      await context.close();
    });
  }

  test('a page of another origin on the same machine cannot rule with the owner’s session', async ({ browser }) => {
    const id = await raise(s, 'Not from over there');
    const target = `http://127.0.0.1:${s.port}`;
    // The attacker's page: a simple no-cors POST (no preflight). It carries the SameSite=Lax session
    // cookie, because another port of 127.0.0.1 is the same site.
    const attacker = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(`<!doctype html><title>elsewhere</title><script>
        fetch(${JSON.stringify(`${target}/api/v1/decisions/${id}/approve`)}, { method: 'POST', mode: 'no-cors', credentials: 'include' });
      </script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    try {
      const { context, page } = await signInAt(browser, target, s);
      const answered = page.waitForResponse((r) => r.url().endsWith(`/decisions/${id}/approve`));
      await page.goto(`http://127.0.0.1:${(attacker.address() as net.AddressInfo).port}/`);
      // 403, not 401: the cookie went along and the origin check refused it (an opaque answer has no body to read).
      expect((await answered).status()).toBe(403);
      expect((await api(s, 'GET', `/decisions/${id}`)).body.decision.status).toBe('pending');
      await context.close();
    } finally {
      attacker.close();
    }
  });
});

/** An SSE lease read as it arrives, and a POST /work whose body is still being sent. */
async function inFlight(s: Started) {
  const sse = await fetch(`http://127.0.0.1:${s.port}/api/v1/events/stream?format=sse&lease_ms=60000`, {
    headers: { Authorization: `Bearer ${s.apiKey}` },
  });
  expect(sse.status).toBe(200);
  const sseText = sse.text();
  const body = JSON.stringify({ title: 'Written while stopping' });
  const post = http.request({
    host: '127.0.0.1',
    port: s.port,
    method: 'POST',
    path: '/api/v1/work',
    headers: { Authorization: `Bearer ${s.apiKey}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    post.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    post.on('error', reject);
  });
  post.write(body.slice(0, 10));
  // The request has reached the server (its headers parsed) before the signal is sent.
  await new Promise((r) => setTimeout(r, 300));
  return {
    finishPost: () => post.end(body.slice(10)),
    answer,
    sseText,
  };
}

const signals: [string, (s: Started) => void][] = [
  ['Ctrl-C to the whole group', (s) => process.kill(-s.npm.pid!, 'SIGINT')],
  ['SIGINT to npm alone', (s) => s.npm.kill('SIGINT')],
  ['SIGTERM to the server process alone', (s) => process.kill(groupPids(s).find((p) => p.cmd.includes('serve.mjs'))!.pid, 'SIGTERM')],
];
for (const [index, [who, send]] of signals.entries()) {
  test(`npm start stops on ${who}: finishes requests in flight, ends leases, exits 0 within 10 s`, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aws-npm-stop-'));
    let s: Started | undefined;
    try {
      s = await npmStart(path.join(dataDir, 'pglite'));
      const flight = await inFlight(s);
      const signalled = Date.now();
      send(s);
      await new Promise((r) => setTimeout(r, 300));
      flight.finishPost();
      const answer = await flight.answer;
      expect(answer.status).toBe(201);
      const taskId = JSON.parse(answer.body).data.taskId as string;
      const sseText = await flight.sseText;
      expect(sseText).toMatch(/event: lease_end\ndata: \{"nextCursor":"[^"]+"\}\n\n$/);
      const exit = await s.exited;
      expect(exit).toMatchObject({ code: 0, signal: null });
      expect(exit.at - signalled).toBeLessThan(10_000);
      expect(s.output()).toContain('Stopping');
      expect(s.output()).toContain('Stopped.');
      expect(s.output()).not.toMatch(/\n\s+at /); // no stack trace
      expect(groupPids(s)).toEqual([]); // nothing left behind
      // The database closed cleanly: it opens again with the write in it (checked once: a start is slow).
      if (index > 0) return;
      const again = await npmStart(path.join(dataDir, 'pglite'), s.port);
      s = { ...again, apiKey: s.apiKey };
      const written = await api(s, 'GET', `/events/stream?type=work.created&limit=100`);
      expect(written.body.data.map((e: { aggregateId: string }) => e.aggregateId)).toEqual([taskId]);
      process.kill(-s.npm.pid!, 'SIGINT');
      expect((await s.exited).code).toBe(0);
    } finally {
      if (s && s.npm.exitCode === null) {
        process.kill(-s.npm.pid!, 'SIGKILL');
        await s.exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

test('behind a load balancer: on SIGTERM /ready turns 503 at once while the instance goes on serving for DRAIN_DELAY_MS, then stops', async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aws-npm-drain-'));
  let s: Started | undefined;
  try {
    s = await npmStart(path.join(dataDir, 'pglite'), undefined, { DRAIN_DELAY_MS: '2000' });
    expect((await api(s, 'GET', '/ready')).status).toBe(200);
    const signalled = Date.now();
    process.kill(groupPids(s).find((p) => p.cmd.includes('serve.mjs'))!.pid, 'SIGTERM');
    await expect.poll(async () => (await api(s!, 'GET', '/ready')).status, { timeout: 1_500 }).toBe(503);
    // Still serving: the balancer is being told, not yet obeyed.
    expect((await api(s, 'GET', '/health')).status).toBe(200);
    expect((await api(s, 'POST', '/work', { title: 'Written while draining' })).status).toBe(201);
    expect(Date.now() - signalled).toBeLessThan(2_000);
    const exit = await s.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.at - signalled).toBeGreaterThanOrEqual(2_000);
    expect(exit.at - signalled).toBeLessThan(10_000);
  } finally {
    if (s && s.npm.exitCode === null) {
      process.kill(-s.npm.pid!, 'SIGKILL');
      await s.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('an operator scrapes /metrics from its own listener while the service is under load', async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aws-npm-metrics-'));
  const metricsPort = await freePort();
  let s: Started | undefined;
  try {
    s = await npmStart(path.join(dataDir, 'pglite'), undefined, { METRICS_PORT: String(metricsPort) });
    const started = s;
    // Load: writers and readers at once.
    const writes = Array.from({ length: 40 }, (_, i) => api(started, 'POST', '/work', { title: `load ${i}` }));
    const reads = Array.from({ length: 20 }, () => api(started, 'GET', '/tasks?limit=5'));
    const scrapedUnderLoad = fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    const answers = await Promise.all([...writes, ...reads]);
    expect(answers.every((a) => a.status === 201 || a.status === 200)).toBe(true);
    expect((await scrapedUnderLoad).status).toBe(200);

    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await scraped.text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);
    expect(value(/^aws_http_requests_total\{operation="POST \/work",status="201"\} (\d+)$/m)).toBeGreaterThanOrEqual(40);
    expect(value(/^aws_http_requests_total\{operation="GET \/tasks",status="200"\} (\d+)$/m)).toBeGreaterThanOrEqual(20);
    expect(value(/^aws_ledger_events_appended_total (\d+)$/m)).toBeGreaterThanOrEqual(40);
    expect(text).toMatch(/^aws_http_request_duration_seconds_bucket\{(?=[^}]*le="0\.1")(?=[^}]*operation="POST \/work")[^}]*\} \d+$/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d+$/m);
    // Not on the API's port, and nothing else on the metrics port.
    expect((await fetch(`http://127.0.0.1:${started.port}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/api/v1/health`)).status).toBe(404);
  } finally {
    if (s && s.npm.exitCode === null) {
      process.kill(-s.npm.pid!, 'SIGKILL');
      await s.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
});
