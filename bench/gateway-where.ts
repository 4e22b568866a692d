/**
 * Where a gateway call's time goes on PostgreSQL (`npm run bench -- --only gateway`, after the two
 * runs), measured from outside the product, on instances of ours run as `npm start` runs them:
 *
 * - Round trips: the service's connections to PostgreSQL go through a TCP relay in this process
 *   that counts the writes the service makes per call (postgres.js sends what it has queued in
 *   one write and waits for the answer, so a write is a round trip), less the background jobs'
 *   rate measured idle just before.
 * - Backend waits: on an instance connected directly, pg_stat_activity of the service's database
 *   sampled as fast as one connection can while the calls run: the share of samples in which a
 *   backend was waiting for the WAL flush of its COMMIT, running a statement, or idle inside a
 *   transaction waiting for the service. The sampler runs in this process beside the agent and
 *   loads the machine: the shares are what count, not how fast the calls went meanwhile (not
 *   reported).
 */
import net from 'node:net';
import postgres from 'postgres';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ADMIN_URL, fmt, freePort, type BenchDb, type Server } from './lib';
import { registerBank } from './gateway';

const WHERE_KINDS = ['ping', 'unknown', 'deny', 'allow', 'read', 'write'] as const;
type WhereKind = (typeof WHERE_KINDS)[number];

const WHERE_WORDS: Record<WhereKind, string> = {
  ping: '/mcp ping',
  unknown: 'bank__nope (lookup only)',
  deny: 'bank__wipe (guard deny)',
  allow: 'bank__echo (guard allow)',
  read: 'get_decision (reads)',
  write: 'create_work (one ledger transaction)',
};

export interface WhereFigures {
  roundTrips: number;
  bytesSent: number;
  /** Shares of the samples (0–1; a sample may count several backends). */
  commitFlush: number;
  statement: number;
  inTransaction: number;
  samples: number;
}

export type WhereResult = Record<WhereKind, WhereFigures>;

/** A TCP relay to PostgreSQL counting the chunks and bytes the service sends through it. */
async function countingRelay(): Promise<{ port: number; sent: () => { chunks: number; bytes: number }; close: () => void }> {
  const target = new URL(ADMIN_URL);
  let chunks = 0;
  let bytes = 0;
  const relay = net.createServer((client) => {
    const server = net.connect(Number(target.port || 5432), target.hostname);
    // Without it, Nagle's algorithm would hold small writes back and every statement would wait.
    client.setNoDelay(true);
    server.setNoDelay(true);
    client.on('data', (d: Buffer) => {
      chunks++;
      bytes += d.length;
      server.write(d);
    });
    server.on('data', (d: Buffer) => client.write(d));
    for (const [a, b] of [
      [client, server],
      [server, client],
    ] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  const port = await freePort();
  await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
  return { port, sent: () => ({ chunks, bytes }), close: () => void relay.close() };
}

/** An agent of `ours` and one call of each kind. */
async function agentOf(ours: Server, apiKey: string): Promise<{ agent: Client; once: Record<WhereKind, () => Promise<unknown>> }> {
  const agent = new Client({ name: 'bench-gateway-where', version: '1' });
  await agent.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', ours.url), { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }),
  );
  const once: Record<WhereKind, () => Promise<unknown>> = {
    ping: () => agent.ping(),
    unknown: () => agent.callTool({ name: 'bank__nope', arguments: {} }).catch(() => undefined),
    deny: () => agent.callTool({ name: 'bank__wipe', arguments: {} }),
    allow: () => agent.callTool({ name: 'bank__echo', arguments: { text: 'hello' } }),
    read: () => agent.callTool({ name: 'get_decision', arguments: { id: '00000000-0000-4000-8000-000000000000' } }),
    write: () => agent.callTool({ name: 'create_work', arguments: { title: 'Benchmark task' } }),
  };
  for (const kind of WHERE_KINDS) for (let i = 0; i < 100; i++) await once[kind]();
  return { agent, once };
}

/**
 * Round trips, then backend waits, of each kind, `calls` calls of each: on a fresh instance of
 * ours (`start`) connected to `db` through the relay, then on another connected to it directly
 * (the relay's hops, in this process, would change what the backends wait for). `db` is fresh:
 * bank is registered here.
 */
export async function measureWhere(
  start: (env: Record<string, string>) => Promise<Server>,
  db: BenchDb,
  upstream: Server,
  calls: number,
): Promise<WhereResult> {
  const ws = db.workspaces[0]!;
  const trips = {} as Record<WhereKind, { roundTrips: number; bytesSent: number }>;
  const relay = await countingRelay();
  try {
    const url = new URL(db.url);
    url.port = String(relay.port);
    const ours = await start({ DATABASE_URL: url.toString() });
    try {
      await registerBank(ours, ws, upstream);
      const { agent, once } = await agentOf(ours, ws.apiKey);
      // The background jobs' own round trips (leases, the integrator), per ms, over three seconds idle.
      const idle0 = relay.sent();
      const idleStarted = performance.now();
      await new Promise((r) => setTimeout(r, 3000));
      const idleRate = (relay.sent().chunks - idle0.chunks) / (performance.now() - idleStarted);
      for (const kind of WHERE_KINDS) {
        const s0 = relay.sent();
        const t0 = performance.now();
        for (let i = 0; i < calls; i++) await once[kind]();
        const s1 = relay.sent();
        const elapsed = performance.now() - t0;
        trips[kind] = { roundTrips: (s1.chunks - s0.chunks - idleRate * elapsed) / calls, bytesSent: (s1.bytes - s0.bytes) / calls };
      }
      await agent.close().catch(() => undefined);
    } finally {
      await ours.stop();
    }
  } finally {
    relay.close();
  }

  const out = {} as WhereResult;
  const ours = await start({ DATABASE_URL: db.url });
  const monitor = postgres(ADMIN_URL, { max: 1, onnotice: () => undefined });
  try {
    const { agent, once } = await agentOf(ours, ws.apiKey);
    for (const kind of WHERE_KINDS) {
      let sampling = true;
      const tally = { commitFlush: 0, statement: 0, inTransaction: 0 };
      let samples = 0;
      const sampler = (async () => {
        while (sampling) {
          const rows = await monitor<{ state: string; wait_event: string | null; query: string }[]>`
            select state, wait_event, left(query, 20) as query from pg_stat_activity
            where datname = ${db.name} and pid <> pg_backend_pid()`;
          samples++;
          for (const r of rows) {
            // WALSync: this backend flushing; WALWrite: waiting for another's flush to cover its commit.
            if (r.state === 'active' && /^commit/i.test(r.query) && (r.wait_event === 'WALSync' || r.wait_event === 'WALWrite'))
              tally.commitFlush++;
            else if (r.state === 'active') tally.statement++;
            else if (r.state === 'idle in transaction') tally.inTransaction++;
          }
        }
      })();
      for (let i = 0; i < calls; i++) await once[kind]();
      sampling = false;
      await sampler;
      out[kind] = {
        ...trips[kind],
        commitFlush: tally.commitFlush / samples,
        statement: tally.statement / samples,
        inTransaction: tally.inTransaction / samples,
        samples,
      };
    }
    await agent.close().catch(() => undefined);
    return out;
  } finally {
    await monitor.end();
    await ours.stop();
  }
}

/** The figures as Markdown lines. */
export function whereLines(r: WhereResult): string[] {
  const pct = (x: number) => `${fmt(100 * x)} %`;
  return [
    '### Where the time goes on PostgreSQL: round trips and what the backends wait for',
    '',
    '| call | round trips to PostgreSQL per call | bytes sent per call | samples with a backend: in COMMIT waiting for the WAL flush / running a statement / idle in a transaction, waiting for the service |',
    '| --- | ---: | ---: | --- |',
    ...WHERE_KINDS.map((kind) => {
      const f = r[kind];
      return `| ${WHERE_WORDS[kind]} | ${fmt(f.roundTrips, 1)} | ${fmt(f.bytesSent)} | ${pct(f.commitFlush)} / ${pct(f.statement)} / ${pct(f.inTransaction)} |`;
    }),
    '',
  ];
}
