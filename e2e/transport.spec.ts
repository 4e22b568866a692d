/**
 * The real server (scripts/serve.mjs) over real sockets, with a keep-alive client (undici): an
 * answer sent before the request's body was read closes its connection cleanly, so the client's
 * next request on the same pool is answered, never reset.
 */
import net from 'node:net';
import { expect, test } from '@playwright/test';
import { Agent, request } from 'undici';
import { fixture } from './support';

const port = process.env.E2E_PORT ?? '3100';
const base = `http://127.0.0.1:${port}/api/v1`;
const BIG = 'x'.repeat(1_200_000);

/** One connection at most, kept alive between requests: a reset would show on the next request. */
let agent: Agent;
test.beforeEach(() => {
  agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
});
test.afterEach(async () => {
  await agent.close();
});

async function call(method: string, path: string, headers: Record<string, string> = {}, body?: string | AsyncIterable<Buffer>) {
  const response = await request(`${base}${path}`, { method: method as 'GET', headers, body: body as never, dispatcher: agent });
  const text = await response.body.text();
  return { status: response.statusCode, connection: response.headers.connection, text };
}

async function* slowly(chunks: number, size: number): AsyncIterable<Buffer> {
  for (let i = 0; i < chunks; i++) yield Buffer.alloc(size, 0x78);
}

const json = { 'content-type': 'application/json' };
const key = () => ({ authorization: `Bearer ${fixture().apiKey}` });

for (const [name, send, status, code] of [
  ['413: a declared body over the limit', () => call('POST', '/work', { ...key(), ...json }, BIG), 413, 'payload_too_large'],
  [
    '413: a chunked body over the limit',
    () => call('POST', '/work', { ...key(), ...json }, slowly(40, 32 * 1024)),
    413,
    'payload_too_large',
  ],
  [
    '401: an unknown key with a large body',
    () => call('POST', '/work', { authorization: 'Bearer awk_unknown', ...json }, JSON.stringify({ title: BIG.slice(0, 500_000) })),
    401,
    'unauthorized',
  ],
  ['415: not JSON', () => call('POST', '/work', { ...key(), 'content-type': 'text/plain' }, 'hello'), 415, 'unsupported_media_type'],
  ['400: broken JSON', () => call('POST', '/work', { ...key(), ...json }, '{"title":'), 400, 'invalid_json'],
] as const) {
  test(`${name}, then the next request on the same pool is answered`, async () => {
    const first = await send();
    expect(first.status, first.text.slice(0, 200)).toBe(status);
    expect(JSON.parse(first.text).error.code).toBe(code);
    const next = await call('GET', '/health');
    expect(next.status).toBe(200);
  });
}

test('an early answer to an unread body says Connection: close; a read one keeps the connection', async () => {
  expect((await call('POST', '/work', { ...key(), ...json }, BIG)).connection).toBe('close');
  expect((await call('POST', '/work', { ...key(), ...json }, JSON.stringify({ title: 'kept alive' }))).connection).toBe('keep-alive');
});

test('a client that leaves mid-body does not disturb the next connection', async () => {
  const controller = new AbortController();
  const leaving = request(`${base}/work`, {
    method: 'POST',
    headers: { ...key(), ...json, 'content-length': String(1_000_000) },
    body: slowly(2, 16 * 1024) as never,
    dispatcher: agent,
    signal: controller.signal,
  }).catch((err: Error) => err);
  setTimeout(() => controller.abort(), 200);
  expect(await leaving).toBeInstanceOf(Error);
  expect((await call('GET', '/health')).status).toBe(200);
});

/** Sends `text` on a raw socket and resolves with what came back once the server closed it, and when. */
function rawUntilClosed(text: string): Promise<{ answer: string; afterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve({ answer, afterMs: Date.now() - started }));
    socket.on('error', reject);
    socket.setTimeout(20_000, () => {
      socket.destroy();
      reject(new Error('the server kept a slow client for 20 s'));
    });
  });
}

test('slow clients are cut: headers that never end, and a body that stops coming (the server runs with 1.5 s and 3 s here)', async () => {
  const headers = await rawUntilClosed('GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
  expect(headers.afterMs).toBeLessThan(8_000);
  expect(headers.answer).toMatch(/^HTTP\/1\.1 408 /);
  const body = await rawUntilClosed(
    `POST /api/v1/work HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${fixture().apiKey}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"title":',
  );
  expect(body.afterMs).toBeLessThan(10_000);
  expect((await call('GET', '/health')).status).toBe(200);
});
