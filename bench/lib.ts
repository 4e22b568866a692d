/**
 * What every benchmark part shares: the benchmark's own PostgreSQL database (created, migrated and
 * seeded with workspaces and API keys, dropped at the end), HTTP load over POST /api/v1/work with
 * autocannon, child processes that are always stopped, and the statistics of repeated runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { hashApiKey } from '@/server/auth/api-keys';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { createWorkspace } from '@/server/domain/workspaces/create-workspace';
import { parseEnv } from '@/server/env';
import { createRuntime } from '@/server/runtime';

export const ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

/** The PostgreSQL server the benchmark creates its database on (trust authentication here). */
export const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchWorkspace {
  workspaceId: string;
  apiKey: string;
  keyHash: string;
}

export interface BenchDb {
  name: string;
  url: string;
  /** Workspaces with one API key each; the first is the "one workspace" of single-workspace runs. */
  workspaces: BenchWorkspace[];
  drop(): Promise<void>;
}

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Creates `aws_bench_<time>`, migrates it with the service's own migrations, and adds workspaces. */
export async function createBenchDb(workspaceCount: number): Promise<BenchDb> {
  const name = `aws_bench_${Date.now()}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = databaseUrl(name);
  const runtime = await createRuntime(parseEnv({ DATABASE_URL: url, SEED_DEMO: 'false', LOG_LEVEL: 'warn' }));
  const workspaces: BenchWorkspace[] = [];
  try {
    for (let i = 0; i < workspaceCount; i++) {
      workspaces.push(await addWorkspace(runtime.db, `bench-${i + 1}`));
    }
  } finally {
    await runtime.close();
  }
  return {
    name,
    url,
    workspaces,
    async drop() {
      const sql = postgres(ADMIN_URL, { max: 1, onnotice: () => undefined });
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.end();
    },
  };
}

/**
 * An embedded PGlite data directory at `dataDir`, migrated, with one workspace and its API key: seeded
 * before a server opens it (PGlite has one user of its files at a time).
 */
export async function createPgliteWorkspace(dataDir: string, name: string): Promise<BenchWorkspace> {
  const runtime = await createRuntime(parseEnv({ PGLITE_DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn' }));
  try {
    return await addWorkspace(runtime.db, name);
  } finally {
    await runtime.close();
  }
}

async function addWorkspace(db: Awaited<ReturnType<typeof createRuntime>>['db'], name: string): Promise<BenchWorkspace> {
  return db.transaction(async (tx) => {
    const trace = systemTrace(randomUUID());
    const created = await createWorkspace(tx, trace, {
      name,
      owner: { email: `${name}@bench.local`, displayName: name, passwordHash: 'not-a-real-hash' },
    });
    const actor: Actor = { type: 'system', id: 'system:bench', ownerId: created.ownerUserId, workspaceId: created.workspaceId, trace };
    const key = await createApiKey(tx, actor, { name: 'bench key' });
    return { workspaceId: created.workspaceId, apiKey: key.secret, keyHash: hashApiKey(key.secret) };
  });
}

/** The POST /work body every writer sends (the same bytes for ours and the peer). */
export const WORK_BODY = JSON.stringify({ title: 'Benchmark task', description: 'Measured append', priority: 'medium' });

export interface LoadResult {
  /** Completed 2xx requests a second. */
  rps: number;
  p50: number;
  p99: number;
  /** Responses that were not 2xx, and socket errors. */
  failures: number;
}

/**
 * POST /api/v1/work at `connections` concurrent connections for `seconds`, each request with a
 * fresh Idempotency-Key and the key of a workspace chosen at random among `workspaces`.
 */
export async function loadWork(baseUrl: string, workspaces: BenchWorkspace[], connections: number, seconds: number): Promise<LoadResult> {
  let n = 0;
  const run = autocannon({
    url: `${baseUrl}/api/v1/work`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (req: Record<string, unknown>) => {
          const ws = workspaces[Math.floor(Math.random() * workspaces.length)]!;
          return {
            ...req,
            body: WORK_BODY,
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${ws.apiKey}`,
              'idempotency-key': `bench-${process.pid}-${++n}-${randomUUID()}`,
            },
          };
        },
      },
    ],
  } as never);
  const result = (await run) as unknown as {
    duration: number;
    non2xx: number;
    errors: number;
    timeouts: number;
    latency: { p50: number; p99: number };
    '2xx': number;
  };
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

const children = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill('SIGTERM');
    process.exit(130);
  });
}
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface Server {
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/** Starts `command` and waits until GET `readyPath` answers 200; the process is stopped on exit. */
export async function startServer(
  command: string,
  args: string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
): Promise<Server> {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited with ${child.exitCode}`);
    try {
      const res = await fetch(url + readyPath);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${command} did not become ready`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    pid: child.pid!,
    url,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await once(child, 'exit');
      clearTimeout(timer);
    },
  };
}

/**
 * CPU time (user + system) a process has used so far, in ms. Around a load run, divided by the
 * requests served, it is the server's CPU per request: what our stack costs beside the peer's,
 * independent of how much of the two shared cores the database and the load generator took.
 */
export function cpuTimeMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticksPerSecond = 100; // USER_HZ, 100 on Linux x86_64 and arm64
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

/** The highest resident set size a process has had (VmHWM), in MiB. */
export async function peakRssMiB(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

export interface Stat {
  median: number;
  min: number;
  max: number;
}

export function stat(values: number[]): Stat {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

/** Runs `measure` `runs` times and summarises each field. */
export async function repeat<T extends Record<string, number>>(runs: number, measure: () => Promise<T>): Promise<Record<keyof T, Stat>> {
  const samples: T[] = [];
  for (let i = 0; i < runs; i++) samples.push(await measure());
  const keys = Object.keys(samples[0]!) as (keyof T)[];
  return Object.fromEntries(keys.map((k) => [k, stat(samples.map((s) => s[k]))])) as Record<keyof T, Stat>;
}

/** Percentile of a sample (nearest rank). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** A figure for the report: `digits` decimals, a dash when there is none. */
export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
/** A repeated figure as "median (min–max)". */
export const range = (s: Stat, digits = 0) => `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;

const TICK_MS = 10; // USER_HZ 100

/** CPU ms used so far by every PostgreSQL process (backends, walwriter, checkpointer…). */
export function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(open + 1, close);
      if (comm !== 'postgres') continue;
      const fields = stat.slice(close + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** Busy and total CPU ms of the whole machine so far (/proc/stat, all cores). */
export function machineCpuMs(): { busy: number; total: number; cores: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const all = lines[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = all as [number, number, number, number, number, number, number, number];
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy * TICK_MS, total: (busy + idle + iowait) * TICK_MS, cores: lines.filter((l) => /^cpu\d/.test(l)).length };
}

/** The next message of `type` a load generator (a forked child) sends; rejects if it exits first. */
export function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null) => reject(new Error(`the load generator exited (${code}) before ${type}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}
