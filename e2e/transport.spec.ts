/**
 * The real server (scripts/serve.mjs) over real sockets, with a keep-alive client (undici): an
 * answer sent before the request's body was read closes its connection cleanly, so the client's
 * next request on the same pool is answered, never reset; HEAD answers carry no body, pipelined
 * requests are answered in order, and an event stream ends and leaves its connection usable.
 */
import net from 'node:net';
import { expect, test } from '@playwright/test';
import { Agent, request } from 'undici';
import { APP_ORIGIN, E2E_PORT, fixture } from './support';

const base = `${APP_ORIGIN}/api/v1`;
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

/** Spends the key's requests for this minute (RATE_LIMIT_API_PER_MIN) on GET /workspace, 16 at a time. */
async function useUpWindow(apiKey: string): Promise<void> {
  const pool = new Agent({ connections: 16 });
  try {
    for (;;) {
      const answers = await Promise.all(
        Array.from({ length: 64 }, () =>
          request(`${base}/workspace`, { headers: { authorization: `Bearer ${apiKey}` }, dispatcher: pool }).then(async (r) => {
            await r.body.dump();
            return r.statusCode;
          }),
        ),
      );
      if (answers.includes(429)) return;
    }
  } finally {
    await pool.close();
  }
}
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
  ['404: an unknown route with a large body', () => call('POST', '/nowhere', { ...key(), ...json }, BIG), 404, 'not_found'],
  [
    '429: a key over its limit, with a large body',
    async () => {
      await useUpWindow(fixture().limitedKey);
      return call('POST', '/work', { authorization: `Bearer ${fixture().limitedKey}`, ...json }, BIG);
    },
    429,
    'rate_limited',
  ],
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
    const socket = net.connect(E2E_PORT, '127.0.0.1', () => socket.write(text));
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

test('HEAD answers carry the headers of GET and no body, whatever the status; the connection goes on', async () => {
  const get = await request(`${base}/health`, { dispatcher: agent });
  const getBody = await get.body.text();
  for (const [path, headers, status] of [
    ['/health', {}, 200],
    ['/workspace', { authorization: 'Bearer awk_unknown' }, 401],
    ['/nowhere', {}, 404],
    ['/workspace', key(), 200],
  ] as const) {
    const head = await request(`${base}${path}`, { method: 'HEAD', headers, dispatcher: agent });
    expect(head.statusCode, path).toBe(status);
    expect(await head.body.text(), path).toBe('');
    expect(head.headers['x-request-id'], path).toMatch(/^[0-9a-f-]{36}$/);
    if (path === '/health') expect(head.headers['content-length']).toBe(String(Buffer.byteLength(getBody)));
    if (status === 401) expect(head.headers['www-authenticate']).toBe('Bearer realm="api"');
  }
  // Had any HEAD answer carried a body, this connection would now be out of step.
  expect((await call('GET', '/health')).status).toBe(200);
});

/** Writes `text` on one raw socket and reads until the server closes it. */
function rawExchange(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(E2E_PORT, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error('no end to the exchange in 10 s'));
    });
  });
}

test('pipelined requests on one connection are answered in order, each once', async () => {
  const work = JSON.stringify({ title: 'pipelined' });
  const answer = await rawExchange(
    `GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` +
      `POST /api/v1/work HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${fixture().apiKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(work)}\r\n\r\n${work}` +
      `HEAD /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` +
      `GET /api/v1/nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
  );
  // Each answer follows the previous one's body directly (no line break between them).
  const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  expect(statuses).toEqual([200, 201, 200, 404]);
  const ids = [...answer.matchAll(/^X-Request-Id: (\S+)/gim)].map((m) => m[1]);
  expect(new Set(ids).size).toBe(4);
  expect(answer).toContain('"title":"pipelined"');
});

test('an event stream ends with lease_end and its connection serves the next request of the pool', async () => {
  const stream = await call('GET', '/events/stream?format=sse&lease_ms=500', key());
  expect(stream.status).toBe(200);
  expect(stream.text).toContain('event: lease_end');
  expect((await call('GET', '/health')).status).toBe(200);
});
