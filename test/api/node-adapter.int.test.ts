/**
 * The node:http handler that serves /api/v1 (server/http/node-api.ts): a body is read once from the
 * socket, declared or chunked, counted while read; a JSON answer goes out whole with its
 * Content-Length; a client that leaves mid-body costs nothing and breaks nothing.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ API_BODY_LIMIT_BYTES: '2048' });
});
afterAll(async () => {
  await app?.close();
});

interface Sent {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** POST /work over a raw socket; `chunked` sends no Content-Length. */
function post(body: string, opts: { chunked?: boolean } = {}): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${app.ws.apiKey}`, 'content-type': 'application/json' };
    if (!opts.chunked) headers['content-length'] = String(Buffer.byteLength(body));
    const req = http.request(`${app.url}/api/v1/work`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.once('error', reject);
    if (opts.chunked) {
      // Two pieces, so the body really arrives as a stream.
      req.write(body.slice(0, 5));
      setTimeout(() => req.end(body.slice(5)), 20);
    } else req.end(body);
  });
}

describe('the node:http adapter', () => {
  it('serves a body of declared length, answering with the JSON whole and its Content-Length', async () => {
    const res = await post(JSON.stringify({ title: 'declared length' }));
    expect(res.status).toBe(201);
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.text)));
    expect(res.headers['transfer-encoding']).toBeUndefined();
    expect(JSON.parse(res.text).data.task.title).toBe('declared length');
  });

  it('serves a chunked body (no Content-Length)', async () => {
    const res = await post(JSON.stringify({ title: 'chunked body' }), { chunked: true });
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).data.task.title).toBe('chunked body');
  });

  it('refuses a body over the limit, declared or chunked, writing nothing', async () => {
    const big = JSON.stringify({ title: 'x', description: 'y'.repeat(3000) });
    await app.expectUnchanged(async () => {
      for (const chunked of [false, true]) {
        const res = await post(big, { chunked });
        expect(res.status).toBe(413);
        expect(JSON.parse(res.text).error.code).toBe('payload_too_large');
      }
    });
  });

  it('a client that leaves while sending its body gets no answer and writes nothing; the server goes on', async () => {
    await app.expectUnchanged(async () => {
      await new Promise<void>((resolve) => {
        const req = http.request(`${app.url}/api/v1/work`, {
          method: 'POST',
          headers: { authorization: `Bearer ${app.ws.apiKey}`, 'content-type': 'application/json', 'content-length': '500' },
        });
        req.once('error', () => resolve());
        req.once('response', () => resolve());
        req.write('{"title": "never fin');
        setTimeout(() => req.destroy(), 50);
      });
      await new Promise((r) => setTimeout(r, 100));
    });
    expect((await post(JSON.stringify({ title: 'after the one that left' }))).status).toBe(201);
  });
});
