/**
 * A webhook receiver on 127.0.0.1 (an ephemeral port): it keeps every request it is sent and
 * answers as the test says (a status, after a delay, or not at all).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

interface Answer {
  status: number;
  /** Milliseconds to wait before answering; Infinity never answers. */
  delayMs?: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Decides each answer (default: 204); `n` counts requests from 0. */
  answer: (request: Received, n: number) => Answer;
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const waiters: { count: number; resolve: () => void }[] = [];
  const receiver: Receiver = {
    url: '',
    received: [],
    answer: () => ({ status: 204 }),
    async waitFor(count, timeoutMs = 10_000) {
      if (receiver.received.length < count) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`receiver got ${receiver.received.length} of ${count} requests in ${timeoutMs} ms`)),
            timeoutMs,
          );
          waiters.push({
            count,
            resolve: () => {
              clearTimeout(timer);
              resolve();
            },
          });
        });
      }
      return receiver.received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
      const request: Received = { path: req.url ?? '/', headers, body, at: Date.now() };
      const n = receiver.received.length;
      receiver.received.push(request);
      for (const w of waiters.filter((w) => receiver.received.length >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const answer = receiver.answer(request, n);
      if (answer.delayMs === Infinity) return;
      setTimeout(() => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body ?? '');
      }, answer.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

/** Receivers started by a test file, closed together when it ends. */
export function receiverPool(): { start(): Promise<Receiver>; closeAll(): Promise<void> } {
  const started: Receiver[] = [];
  return {
    async start() {
      const r = await startReceiver();
      started.push(r);
      return r;
    },
    closeAll: async () => {
      await Promise.all(started.map((r) => r.close()));
    },
  };
}
