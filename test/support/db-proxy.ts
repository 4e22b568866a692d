/**
 * A TCP proxy between the app and PostgreSQL that a test can take down and bring back, to see the
 * database "stop" and "return" without touching the shared server. Listens on 127.0.0.1 only.
 */
import net from 'node:net';

export interface DbProxy {
  port: number;
  /** Rewrites a database URL to go through the proxy. */
  via(url: string): string;
  /** Refuses new connections and cuts every open one (the database is gone). */
  down(): Promise<void>;
  /** Accepts connections again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export interface DbProxyOptions {
  /** Sees every connection the app opens, e.g. to read what it sends (the bytes are forwarded regardless). */
  onClient?: (client: net.Socket) => void;
  /**
   * Holds every answer from the database this long before passing it on, and calls `onAnswer`
   * as it does. What the app sends before an answer reaches it, it sent without waiting: a test
   * counts the app's round trips that way, whatever the timing of its writes.
   */
  answerDelayMs?: number;
  onAnswer?: () => void;
}

/** A database URL rewritten to reach 127.0.0.1:`port`, and where a proxy there should forward to. */
export function routeThrough(url: string, port: number): { url: string; target: { host: string; port: number } } {
  const u = new URL(url);
  const target = { host: u.hostname, port: Number(u.port || 5432) };
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return { url: u.toString(), target };
}

export async function startDbProxy(opts: DbProxyOptions = {}): Promise<DbProxy> {
  // Where the proxy forwards to: the server of the last URL given to via().
  let target = { host: '127.0.0.1', port: 5432 };
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => undefined);
        }
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.pipe(upstream);
        const delay = opts.answerDelayMs;
        if (delay === undefined) upstream.pipe(client);
        else
          upstream.on('data', (chunk: Buffer) => {
            // Equal delays fire in order, so answers keep their order.
            setTimeout(() => {
              opts.onAnswer?.();
              if (!client.destroyed) client.write(chunk);
            }, delay);
          });
        opts.onClient?.(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });
  const stop = async () => {
    const s = server;
    server = null;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return {
    get port() {
      return port;
    },
    via(url: string) {
      const routed = routeThrough(url, port);
      target = routed.target;
      return routed.url;
    },
    down: stop,
    up: listen,
    close: stop,
  };
}
