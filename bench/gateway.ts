/**
 * The MCP gateway (`npm run bench -- --only gateway`): what a call through /mcp to an upstream MCP
 * server costs against calling that server directly, and what guarded calls waiting for a ruling
 * hold in memory.
 *
 * 1. Latency. An upstream MCP server written with the SDK (bench/gateway-upstream.mjs, a process of
 *    its own) and the built service (as `npm start` runs it) fronting it as `bank`, its tools
 *    `echo` and `account` under guard allow, `wipe` under deny. One agent in this process (the
 *    SDK's Client over its Streamable HTTP transport) calls each tool sequentially, directly and
 *    through the gateway, and, to show where the gateway's time goes, the floors of our own
 *    endpoint: the service's /mcp `ping`, a gateway tool that is not there (the lookup alone), a
 *    denied call (the lookup and one ledger transaction), a service tool that only reads
 *    (get_decision of an id that is not there) and one that appends to the ledger (create_work).
 *    Every kind is warmed up, then measured in blocks interleaved round-robin, so that a change in
 *    the machine's load touches all of them, each block by a fresh agent. Beside the latencies:
 *    the CPU each process spent per call (the service, the upstream, the PostgreSQL backends of
 *    their databases, this one) and the ledger events the call appended.
 * 2. Memory. Guarded calls (guard ask) left waiting, each on a connection and session of its own,
 *    from a load generator in its own process (bench/gateway-load.mjs): the server's resident set
 *    and V8 heap before and with all of them waiting, then every connection closed and the
 *    service asked for a ping.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cpuTimeMs, fmt, freePort, nextMessage, percentile, ROOT, startServer, type BenchWorkspace, type Server } from './lib';

// The SDK's client transport hands every fetch the same AbortSignal (its own, for closing), and
// undici's fetch leaves a listener on it per request until the request is collected: past 10, node
// warns (MaxListenersExceededWarning). The SDK's doing, not the service's; the bench's clients are
// agents as the SDK makes them, so the limit is lifted rather than the fetch changed (0: no limit),
// and each block of calls gets a fresh agent (measureLatency) so that the leak cannot move the figures.
setMaxListeners(0);

/** The kinds of call measured, in the order the report gives them. */
export const KINDS = [
  'direct echo',
  'gateway echo',
  'direct account',
  'gateway account',
  'ping',
  'unknown',
  'deny',
  'read',
  'write',
] as const;
export type Kind = (typeof KINDS)[number];

/** What each kind is, as the report says it. */
export const KIND_WORDS: Record<Kind, string> = {
  'direct echo': 'echo, straight to the upstream',
  'gateway echo': 'bank__echo through the gateway (guard allow)',
  'direct account': 'account (one row by primary key), straight to the upstream',
  'gateway account': 'bank__account through the gateway (guard allow)',
  ping: "the service's /mcp ping (the key's check, the session)",
  unknown: 'bank__nope through the gateway: the lookup, then "no such tool" (no write, no upstream)',
  deny: 'bank__wipe through the gateway (guard deny): the lookup and one ledger transaction, no upstream',
  read: 'a service tool that reads: get_decision of a missing id',
  write: 'a service tool that appends to the ledger: create_work',
};

export interface KindFigures {
  calls: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  /**
   * CPU ms per call of each process: the service, the upstream, the PostgreSQL backends of the
   * service's and the upstream's databases (not the WAL writer's, nor anyone else's on the
   * server), this one (the agent).
   */
  cpu: { server: number; upstream: number; postgres: number; agent: number };
  /** Ledger events appended per call (NaN on PGlite, whose files the server holds). */
  ledgerEvents: number;
  /** Calls whose answer was not the one expected (an error where a result was due, or the reverse). */
  wrong: number;
}

export interface LatencyResult {
  engine: 'postgresql' | 'pglite';
  kinds: Record<Kind, KindFigures>;
  /** tools/call the upstream received per tool during the measure, warm-up included, and what was sent. */
  upstreamReceived: Record<string, number>;
  upstreamSent: Record<string, number>;
  /** The machine's load average (1, 5, 15 min) before and after. */
  loadBefore: number[];
  loadAfter: number[];
  seconds: number;
}

export interface LatencyOptions {
  warmup: number;
  block: number;
  rounds: number;
}

/** The upstream MCP server in a process of its own, on a scratch database of its own. */
export async function startUpstream(scratchUrl: string): Promise<Server> {
  const port = await freePort();
  return startServer(
    process.execPath,
    [path.join(ROOT, 'bench', 'gateway-upstream.mjs')],
    { PORT: String(port), DATABASE_URL: scratchUrl },
    port,
    '/health',
  );
}

/** What the upstream has received so far. */
async function upstreamStats(upstream: Server): Promise<Record<string, number>> {
  const res = await fetch(`${upstream.url}/stats`);
  return ((await res.json()) as { received: Record<string, number> }).received;
}

/** Registers the upstream as `bank` over REST, as an owner's key does: echo and account allowed, wipe denied, every other tool asks. */
export async function registerBank(ours: Server, ws: BenchWorkspace, upstream: Server): Promise<void> {
  const res = await fetch(`${ours.url}/api/v1/mcp-servers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ws.apiKey}` },
    body: JSON.stringify({
      name: 'bank',
      url: `${upstream.url}/mcp`,
      guards: [
        { tool: 'echo', mode: 'allow' },
        { tool: 'account', mode: 'allow' },
        { tool: 'wipe', mode: 'deny' },
      ],
      default_mode: 'ask',
    }),
  });
  if (res.status !== 201) throw new Error(`POST /mcp-servers answered ${res.status}: ${await res.text()}`);
}

/** An agent: the SDK's client, connected to `url` with `headers`. */
async function agent(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'bench-gateway-agent', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

/**
 * CPU ms used so far by the PostgreSQL backends connected to `databases`: the server is shared
 * (other sessions' tests use it), so only these are counted. A backend that ends takes its count
 * with it; the service's and the upstream's keep their connections for the whole measure.
 */
function backendsCpuMs(databases: string[]): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      // A backend's title: "postgres: 15/main: <user> <database> <client> <state>".
      if (!title.startsWith('postgres: ') || !databases.some((db) => title.includes(` ${db} `))) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ 100
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** Ends an agent's session (DELETE), so that the service and the upstream hold none of the bench's old ones, then closes it. */
async function retire(client: Client): Promise<void> {
  await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => undefined);
  await client.close().catch(() => undefined);
}

const CALL_TIMEOUT = { timeout: 60_000 };
const WORK = { title: 'Benchmark task', description: 'Measured append', priority: 'medium' };

/**
 * Latency of every kind, as described at the top. `pg.ledger`: the service's database, to count
 * the ledger events each kind appends (none on PGlite); `pg.databases`: the databases whose
 * backends' CPU is counted.
 */
export async function measureLatency(
  ours: Server,
  ws: BenchWorkspace,
  upstream: Server,
  engine: LatencyResult['engine'],
  opts: LatencyOptions,
  pg: { ledger: string | null; databases: string[] },
): Promise<LatencyResult> {
  const started = performance.now();
  const loadBefore = loadavg();
  const received0 = await upstreamStats(upstream);
  const service = `${ours.url}/mcp`;
  const auth = { Authorization: `Bearer ${ws.apiKey}` };
  const direct = `${upstream.url}/mcp`;
  /** A new agent for `kind`: the direct ones to the upstream, the others to the service with the key. */
  const connectAs = (kind: Kind) => (kind.startsWith('direct') ? agent(direct) : agent(service, auth));
  const clients = {} as Record<Kind, Client>;
  for (const kind of KINDS) clients[kind] = await connectAs(kind);
  /**
   * Each block is made by an agent of its own (connected before the block's clock starts): the
   * SDK's transport keeps an abort listener per request it made on its signal (above), and node
   * walks that list on every request, so an agent's calls slow as it ages (~50 µs after 4,000 here,
   * a tenth of a direct echo). A fresh agent a block keeps every kind alike and the figures free of it.
   */
  const renew = async (kind: Kind) => {
    await retire(clients[kind]);
    clients[kind] = await connectAs(kind);
  };
  const sent = { echo: 0, account: 0 };
  const tool = async (kind: Kind, name: string, args: Record<string, unknown>, error: boolean): Promise<boolean> => {
    const result = (await clients[kind].callTool({ name, arguments: args }, undefined, CALL_TIMEOUT)) as CallToolResult;
    return (result.isError === true) === error;
  };
  let n = 0;
  /** One call of `kind`; true when it answered as it should. */
  const once: Record<Kind, () => Promise<boolean>> = {
    'direct echo': () => (sent.echo++, tool('direct echo', 'echo', { text: 'hello', n: ++n }, false)),
    'gateway echo': () => (sent.echo++, tool('gateway echo', 'bank__echo', { text: 'hello', n: ++n }, false)),
    'direct account': () => (sent.account++, tool('direct account', 'account', { id: 1 + (++n % 1000) }, false)),
    'gateway account': () => (sent.account++, tool('gateway account', 'bank__account', { id: 1 + (++n % 1000) }, false)),
    ping: async () => (await clients.ping.ping(CALL_TIMEOUT), true),
    unknown: () =>
      clients.unknown.callTool({ name: 'bank__nope', arguments: {} }, undefined, CALL_TIMEOUT).then(
        () => false,
        (err: unknown) => err instanceof Error && /No tool named bank__nope/.test(err.message),
      ),
    deny: () => tool('deny', 'bank__wipe', { everything: true }, true),
    read: () => tool('read', 'get_decision', { id: randomUUID() }, true),
    write: () => tool('write', 'create_work', WORK, false),
  };
  const ledger = pg.ledger ? postgres(pg.ledger, { max: 1, onnotice: () => undefined }) : null;
  const ledgerHead = async () =>
    ledger ? Number((await ledger<{ n: string }[]>`select coalesce(sum(sequence), 0) as n from ledger_heads`)[0]!.n) : NaN;
  try {
    for (const kind of KINDS) for (let i = 0; i < opts.warmup; i++) await once[kind]();

    const samples = Object.fromEntries(KINDS.map((k) => [k, [] as number[]])) as Record<Kind, number[]>;
    const totals = Object.fromEntries(
      KINDS.map((k) => [k, { server: 0, upstream: 0, postgres: 0, agent: 0, events: 0, wrong: 0 }]),
    ) as Record<Kind, { server: number; upstream: number; postgres: number; agent: number; events: number; wrong: number }>;
    for (let round = 0; round < opts.rounds; round++) {
      // Each round starts with another kind, so none is always the one after a given other.
      const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length]!);
      for (const kind of order) {
        await renew(kind);
        const before = {
          server: cpuTimeMs(ours.pid),
          upstream: cpuTimeMs(upstream.pid),
          postgres: backendsCpuMs(pg.databases),
          agent: process.cpuUsage(),
          events: await ledgerHead(),
        };
        const out = samples[kind];
        let wrong = 0;
        for (let i = 0; i < opts.block; i++) {
          const t = performance.now();
          const ok = await once[kind]();
          out.push(performance.now() - t);
          if (!ok) wrong++;
        }
        const agentCpu = process.cpuUsage(before.agent);
        const t = totals[kind];
        t.server += cpuTimeMs(ours.pid) - before.server;
        t.upstream += cpuTimeMs(upstream.pid) - before.upstream;
        t.postgres += backendsCpuMs(pg.databases) - before.postgres;
        t.agent += (agentCpu.user + agentCpu.system) / 1000;
        t.events += (await ledgerHead()) - before.events;
        t.wrong += wrong;
      }
    }
    const kinds = Object.fromEntries(
      KINDS.map((kind) => {
        const s = samples[kind];
        const t = totals[kind];
        const per = (x: number) => x / s.length;
        return [
          kind,
          {
            calls: s.length,
            p50: percentile(s, 50),
            p90: percentile(s, 90),
            p99: percentile(s, 99),
            mean: s.reduce((a, b) => a + b, 0) / s.length,
            cpu: { server: per(t.server), upstream: per(t.upstream), postgres: per(t.postgres), agent: per(t.agent) },
            ledgerEvents: per(t.events),
            wrong: t.wrong,
          } satisfies KindFigures,
        ];
      }),
    ) as Record<Kind, KindFigures>;
    return {
      engine,
      kinds,
      upstreamReceived: Object.fromEntries(
        Object.entries(await upstreamStats(upstream)).map(([tool, n]) => [tool, n - (received0[tool] ?? 0)]),
      ),
      upstreamSent: sent,
      loadBefore,
      loadAfter: loadavg(),
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    for (const client of Object.values(clients)) await retire(client);
    await ledger?.end();
  }
}

export interface MemoryResult {
  calls: number;
  opened: number;
  failures: string[];
  openSeconds: number;
  /** Decisions the calls raised (pending, of the bank server), counted in the database. */
  decisionsRaised: number;
  /** VmRSS of the server (MiB) before the calls, with all waiting, after they were closed; and its peak (VmHWM). */
  rss: { before: number; waiting: number; after: number; peak: number };
  /** V8 heap in use (MiB), same moments. */
  heapUsed: { before: number; waiting: number; after: number };
  /** Calls answered while they should have been waiting (none is ruled), and progress notifications received. */
  answered: number;
  progress: number;
  /** tools/call the upstream received of the guarded tool (none may reach it: none is approved). */
  upstreamReceived: number;
  /** The service answered an MCP ping and an allowed gateway call after the calls were closed. */
  pingAfter: boolean;
  gatewayAfter: boolean;
  loadBefore: number[];
  loadAfter: number[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/**
 * `calls` guarded calls held open at once on one fresh instance (`start` starts it on `dbUrl`,
 * where `bank` is registered already), after `warm` such calls made and closed so that the code
 * the calls run is loaded and compiled before the baseline is read.
 */
export async function measureAskMemory(
  start: (env: Record<string, string>) => Promise<Server>,
  dbUrl: string,
  ws: BenchWorkspace,
  upstream: Server,
  opts: { calls: number; warm: number; settleSeconds: number },
): Promise<MemoryResult> {
  const loadBefore = loadavg();
  const metricsPort = await freePort();
  // One key makes every call: its limits on open sessions and on waits (leases) are lifted here, as
  // an operator fronting many agents with one key would.
  const ours = await start({
    DATABASE_URL: dbUrl,
    METRICS_PORT: String(metricsPort),
    MCP_SESSIONS_PER_KEY: '100000',
    SSE_LEASES_PER_KEY: '100000',
  });
  const heapUsed = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? NaN) / 1048576;
  };
  const db = postgres(dbUrl, { max: 1, onnotice: () => undefined });
  const dir = mkdtempSync(path.join(tmpdir(), 'aws-gateway-'));
  const loads: ReturnType<typeof fork>[] = [];
  const pending = async () =>
    Number(
      (
        await db<{ n: string }[]>`
          select count(*) as n from decisions
          where workspace_id = ${ws.workspaceId} and status = 'pending' and gateway_server_id is not null`
      )[0]!.n,
    );
  /** A load generator making `calls` calls (arguments numbered from `offset`); resolves once they are under way. */
  const generate = async (calls: number, offset: number) => {
    const configFile = path.join(dir, `config-${offset}.json`);
    writeFileSync(configFile, JSON.stringify({ url: ours.url, apiKey: ws.apiKey, tool: 'bank__transfer', calls, offset }));
    const child = fork(path.join(ROOT, 'bench', 'gateway-load.mjs'), [configFile], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    loads.push(child);
    const next = <T>(type: string) => nextMessage<T>(child, type);
    const ready = await next<{ opened: number; failures: string[]; ms: number }>('ready');
    return {
      ready,
      stop: async () => {
        const stopped = next<{ answered: number; progress: number }>('stopped');
        child.send({ type: 'stop' });
        const counts = await stopped;
        if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
        return counts;
      },
    };
  };
  /** Waits until `n` guarded calls have raised their decisions. */
  const raised = async (n: number) => {
    for (let i = 0; i < 600 && (await pending()) < n; i++) await sleep(100);
    return pending();
  };
  try {
    const received0 = (await upstreamStats(upstream)).transfer ?? 0;
    const warm = await generate(opts.warm, 1_000_000);
    await raised(opts.warm);
    await warm.stop();
    await sleep(opts.settleSeconds * 1000);
    const before = { ...(await memoryOf(ours.pid)), heap: await heapUsed() };
    const waitingBefore = await pending();

    const load = await generate(opts.calls, 0);
    const decisionsRaised = (await raised(waitingBefore + opts.calls)) - waitingBefore;
    await sleep(opts.settleSeconds * 1000);
    const waiting = { ...(await memoryOf(ours.pid)), heap: await heapUsed() };
    const counts = await load.stop();
    await sleep(opts.settleSeconds * 1000);
    const after = { ...(await memoryOf(ours.pid)), heap: await heapUsed() };

    // The service still answers: a ping, and an allowed call through the gateway.
    let pingAfter = false;
    let gatewayAfter = false;
    const client = await agent(`${ours.url}/mcp`, { Authorization: `Bearer ${ws.apiKey}` });
    try {
      pingAfter = (await client.ping({ timeout: 10_000 })) !== undefined;
      const echoed = (await client.callTool({ name: 'bank__echo', arguments: { text: 'still here' } }, undefined, {
        timeout: 10_000,
      })) as CallToolResult;
      gatewayAfter = echoed.isError !== true;
    } finally {
      await client.close().catch(() => undefined);
    }
    return {
      calls: opts.calls,
      opened: load.ready.opened,
      failures: load.ready.failures,
      openSeconds: load.ready.ms / 1000,
      decisionsRaised,
      rss: { before: before.rss, waiting: waiting.rss, after: after.rss, peak: after.peak },
      heapUsed: { before: before.heap, waiting: waiting.heap, after: after.heap },
      answered: counts.answered,
      progress: counts.progress,
      upstreamReceived: ((await upstreamStats(upstream)).transfer ?? 0) - received0,
      pingAfter,
      gatewayAfter,
      loadBefore,
      loadAfter: loadavg(),
    };
  } finally {
    for (const child of loads) if (child.exitCode === null) child.kill('SIGKILL');
    await db.end().catch(() => undefined);
    await ours.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (n: number) => fmt(n, n < 10 ? 2 : 1);
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');

/** The latency figures of one run as Markdown lines: a table of every kind, then the ratios and the targets. */
export function latencyLines(run: number, r: LatencyResult): { lines: string[]; checks: [string, boolean, string][] } {
  const k = r.kinds;
  const lines = [
    `### Run ${run}, ${r.engine === 'postgresql' ? 'PostgreSQL' : 'PGlite'}: latency (${k['direct echo'].calls.toLocaleString('en')} sequential calls of each kind, ` +
      `interleaved; load average ${load(r.loadBefore)} → ${load(r.loadAfter)}; ${fmt(r.seconds)} s)`,
    '',
    '| call | p50 ms | p90 ms | p99 ms | mean ms | CPU ms per call: service / upstream / PostgreSQL / agent | ledger events per call | wrong |',
    '| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |',
    ...KINDS.map((kind) => {
      const f = k[kind];
      const cpu = [f.cpu.server, f.cpu.upstream, f.cpu.postgres, f.cpu.agent].map((x) => fmt(x, 2)).join(' / ');
      return `| ${KIND_WORDS[kind]} | ${ms(f.p50)} | ${ms(f.p90)} | ${ms(f.p99)} | ${ms(f.mean)} | ${cpu} | ${fmt(f.ledgerEvents, 2)} | ${f.wrong} |`;
    }),
    '',
  ];
  const checks: [string, boolean, string][] = [];
  for (const tool of ['echo', 'account'] as const) {
    const direct = k[`direct ${tool}`];
    const gateway = k[`gateway ${tool}`];
    const ratio = gateway.p50 / direct.p50;
    lines.push(
      `- ${tool}: gateway p50 ${ms(gateway.p50)} ms / direct ${ms(direct.p50)} ms = **${fmt(ratio, 2)} ×**, ` +
        `${ms(gateway.p50 - direct.p50)} ms added (p90 ${fmt(gateway.p90 / direct.p90, 2)} ×, p99 ${fmt(gateway.p99 / direct.p99, 2)} ×)`,
    );
    checks.push([`run ${run}, ${r.engine}: gateway ${tool} p50 ≤ 1.3 × direct`, ratio <= 1.3, `${fmt(ratio, 2)} ×`]);
  }
  // Where a gateway call's time goes, from the kinds measured beside it: each step the difference
  // of two of them, for the medians (the target's figure) and the means (which add up, as medians
  // need not). Estimates: a small step may come out below zero.
  const steps = (f: (kind: Kind) => number) => {
    const tx = f('deny') - f('unknown');
    return [
      f('ping'),
      f('unknown') - f('ping'),
      tx,
      f('gateway echo') - f('deny'),
      f('direct echo'),
      tx,
      f('gateway echo') - f('deny') - f('direct echo') - tx,
    ];
  };
  const p50s = steps((kind) => k[kind].p50);
  const means = steps((kind) => k[kind].mean);
  const words = [
    'our /mcp endpoint: key, session, JSON-RPC (ping)',
    "finding the tool: the server's row (unknown tool − ping)",
    'one ledger transaction, tool_call.refused (deny − unknown)',
    'the rest of an allowed call (allow − deny)',
    '&nbsp;&nbsp;of which the upstream as an agent reaches it (direct echo)',
    '&nbsp;&nbsp;of which a second ledger transaction, tool_call.returned (≈ deny − unknown)',
    "&nbsp;&nbsp;left: the service as the upstream's client, beyond what the agent's client costs",
  ];
  lines.push(
    '',
    `Where bank__echo's time (p50 ${ms(k['gateway echo'].p50)} ms, mean ${ms(k['gateway echo'].mean)} ms) goes, as differences of the kinds above:`,
    '',
    '| step | p50 ms | mean ms |',
    '| --- | ---: | ---: |',
    ...words.map((w, i) => `| ${w} | ${ms(p50s[i]!)} | ${ms(means[i]!)} |`),
    '',
    `(A service tool that writes one ledger transaction, create_work, − one that reads, get_decision: ${ms(k.write.p50 - k.read.p50)} ms p50, ` +
      `${ms(k.write.mean - k.read.mean)} ms mean.)`,
    '',
  );
  const wrong = KINDS.reduce((n, kind) => n + k[kind].wrong, 0);
  const received = r.upstreamReceived;
  const sentOk = received.echo === r.upstreamSent.echo && received.account === r.upstreamSent.account && received.wipe === 0;
  lines.push(
    `- the upstream received ${received.echo} echo and ${received.account} account calls for ${r.upstreamSent.echo} and ` +
      `${r.upstreamSent.account} sent, and ${received.wipe} of the denied wipe ${sentOk ? '✓' : '✗'}; answers not as expected: ${wrong} ${wrong === 0 ? '✓' : '✗'}`,
  );
  checks.push([
    `run ${run}, ${r.engine}: every allowed call reached the upstream once, no denied one, all answered as expected`,
    sentOk && wrong === 0,
    `${wrong} wrong`,
  ]);
  return { lines: [...lines, ''], checks };
}

/** The memory figures of one run as Markdown lines and the target's check. */
export function memoryLines(run: number, m: MemoryResult): { lines: string[]; checks: [string, boolean, string][] } {
  const growthMiB = m.rss.waiting - m.rss.before;
  const growthMB = (growthMiB * 2 ** 20) / 1e6;
  const ok = (b: boolean) => (b ? '✓' : '✗');
  const lines = [
    `### Run ${run}, PostgreSQL: ${m.calls.toLocaleString('en')} guarded calls waiting (load average ${load(m.loadBefore)} → ${load(m.loadAfter)})`,
    '',
    `- opened ${m.opened} of ${m.calls} in ${fmt(m.openSeconds, 1)} s ${ok(m.opened === m.calls)}${m.failures.length ? ` (e.g. ${m.failures.join('; ')})` : ''}; ` +
      `${m.decisionsRaised} decisions raised ${ok(m.decisionsRaised === m.calls)}; answered while waiting ${m.answered} ${ok(m.answered === 0)}; ` +
      `progress notifications ${m.progress}; the upstream received ${m.upstreamReceived} of the guarded tool ${ok(m.upstreamReceived === 0)}`,
    `- RSS ${fmt(m.rss.before)} MiB before → ${fmt(m.rss.waiting)} MiB with all waiting: **+${fmt(growthMiB, 1)} MiB (${fmt(growthMB, 1)} MB)**, ` +
      `${fmt((growthMiB * 1024) / m.calls, 1)} KiB a call; ${fmt(m.rss.after)} MiB once closed; peak ${fmt(m.rss.peak)} MiB`,
    `- V8 heap in use ${fmt(m.heapUsed.before, 1)} → ${fmt(m.heapUsed.waiting, 1)} MiB (+${fmt(m.heapUsed.waiting - m.heapUsed.before, 1)}), ` +
      `${fmt(m.heapUsed.after, 1)} MiB once closed`,
    `- after closing them: /mcp ping ${ok(m.pingAfter)}, an allowed gateway call ${ok(m.gatewayAfter)}`,
    '',
  ];
  return {
    lines,
    checks: [
      [
        `run ${run}: ${m.calls} pending ask calls, RSS growth ≤ 100 MB, all opened and raised, none answered or forwarded, the service answers after`,
        growthMB <= 100 &&
          m.opened === m.calls &&
          m.decisionsRaised === m.calls &&
          m.answered === 0 &&
          m.upstreamReceived === 0 &&
          m.pingAfter &&
          m.gatewayAfter,
        `+${fmt(growthMB, 1)} MB`,
      ],
    ],
  };
}
