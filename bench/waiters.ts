/**
 * Ten thousand waiting at once (`npm run bench -- --only waiters`): one instance of ours
 * holds SSE leases with API keys (agents following events), SSE leases with a signed-in human's
 * session (the live inbox) and MCP request_decision waits, all open together, opened and read by a
 * load generator in a process of its own (bench/waiters-load.mjs).
 *
 * 1. Idle cost: the bench database's transactions, and scans of the tables waiters read
 *    (ledger_events, ledger_heads, api_keys, decisions), over a window with every waiter open and
 *    idle, against a window of the same length before any was opened.
 * 2. Delivery: a writer appends POST /work to the workspaces in turn at a steady rate, and humans
 *    approve a share of the MCP waits' decisions over REST at a steady rate. Latency = arrival at
 *    the load generator − the event's occurredAt (SSE) or the ruling's resolved_at (MCP): the same
 *    clock on one machine, and conservative, since both are taken before the commit.
 * 3. Memory: the server's resident set (VmRSS) with every waiter open, and its peak (VmHWM).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { encodeSession, sessionCookieName } from '@/server/auth/session';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { addMember } from '@/server/domain/workspaces/members';
import { parseEnv } from '@/server/env';
import { encodeCursor } from '@/server/ledger/cursor';
import { createRuntime } from '@/server/runtime';
import { ADMIN_URL, freePort, nextMessage, percentile, ROOT, WORK_BODY, type BenchDb, type Server } from './lib';

export interface WaitersOptions {
  /** Waiters of each kind, spread evenly over the workspaces. */
  sse: number;
  session: number;
  mcp: number;
  /** MCP waits whose decision a human approves during the delivery phase. */
  approvals: number;
  /** Length of the delivery phase, and the writer's and the approvers' rates. */
  seconds: number;
  writesPerSecond: number;
  /** Idle windows: quiet time first (PostgreSQL publishes a backend's counters up to 10 s late), then the window. */
  settleSeconds: number;
  idleSeconds: number;
}

export interface WaitersResult {
  waiters: number;
  openSeconds: number;
  openFailures: number;
  rssMiB: number;
  peakRssMiB: number;
  /** The V8 heap with all open: in use (with garbage) and committed, and memory outside it (buffers), MiB. */
  heap: { used: number; committed: number; external: number };
  idleRssMiB: number;
  idleQueries: number;
  idleBaselineQueries: number;
  idleScans: number;
  idleBaselineScans: number;
  sseP50: number;
  sseP99: number;
  sseDelivered: number;
  sseExpected: number;
  mcpP50: number;
  mcpP99: number;
  mcpAnswered: number;
  allP99: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function rssMiB(pid: number): Promise<{ now: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { now: kb('VmRSS'), peak: kb('VmHWM') };
}

/** The people and secrets the waiters need: an approver per workspace, a session cookie, a cursor at the head. */
async function prepare(db: BenchDb, authSecret: string) {
  const runtime = await createRuntime(parseEnv({ DATABASE_URL: db.url, SEED_DEMO: 'false', LOG_LEVEL: 'warn' }));
  try {
    const out = [];
    for (const ws of db.workspaces) {
      const approver = await runtime.db.transaction(async (tx) => {
        const actor: Actor = {
          type: 'system',
          id: 'system:bench',
          ownerId: ws.workspaceId,
          workspaceId: ws.workspaceId,
          trace: systemTrace(randomUUID()),
        };
        const email = `waiter-approver-${ws.workspaceId.slice(0, 8)}@bench.local`;
        return (await addMember(tx, actor, { email, displayName: 'Bench approver', passwordHash: 'x', role: 'approver' })).userId;
      });
      out.push({ ...ws, approver, session: await encodeSession(approver, authSecret) });
    }
    return out;
  } finally {
    await runtime.close();
  }
}

export async function measureWaiters(
  start: (env: Record<string, string>) => Promise<Server>,
  db: BenchDb,
  opts: WaitersOptions,
): Promise<WaitersResult> {
  const authSecret = randomUUID();
  const people = await prepare(db, authSecret);
  const metricsPort = await freePort();
  const ours = await start({ DATABASE_URL: db.url, AUTH_SECRET: authSecret, METRICS_PORT: String(metricsPort) });
  /** The server's heap figures, from its metrics listener (prom-client's process metrics). */
  const heap = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const mib = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1048576;
    return {
      used: mib('nodejs_heap_size_used_bytes'),
      committed: mib('nodejs_heap_size_total_bytes'),
      external: mib('nodejs_external_memory_bytes'),
    };
  };
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => undefined });
  const bench = postgres(db.url, { max: 1, onnotice: () => undefined });
  const dir = mkdtempSync(path.join(tmpdir(), 'aws-waiters-'));
  let load: ReturnType<typeof fork> | null = null;
  try {
    const transactions = async () =>
      Number(
        (await admin<{ n: string }[]>`select xact_commit + xact_rollback as n from pg_stat_database where datname = ${db.name}`)[0]!.n,
      );
    const scans = async () =>
      Number(
        (
          await bench<{ n: string }[]>`
            select coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0) as n from pg_stat_user_tables
            where relname in ('ledger_events', 'ledger_heads', 'api_keys', 'decisions')`
        )[0]!.n,
      );
    const idleWindow = async () => {
      await sleep(opts.settleSeconds * 1000);
      const s0 = await scans();
      await sleep(200);
      const x0 = await transactions();
      await sleep(opts.idleSeconds * 1000);
      const x1 = await transactions();
      const s1 = await scans();
      return { transactions: x1 - x0, scans: s1 - s0 };
    };
    const baseline = await idleWindow();
    const idleRss = (await rssMiB(ours.pid)).now;

    const [secret] = await bench<{ value: string }[]>`select value from instance_secrets where name = 'cursor_hmac'`;
    const heads = new Map(
      (await bench<{ workspace_id: string; sequence: string }[]>`select workspace_id, sequence from ledger_heads`).map((r) => [
        r.workspace_id,
        Number(r.sequence),
      ]),
    );
    const n = people.length;
    const share = (total: number, i: number) => Math.floor(total / n) + (i < total % n ? 1 : 0);
    const cookieName = sessionCookieName(ours.url);
    const config = {
      url: ours.url,
      leaseMs: 300_000,
      waitSeconds: 600,
      workspaces: people.map((p, i) => ({
        workspaceId: p.workspaceId,
        apiKey: p.apiKey,
        cookie: `${cookieName}=${p.session}`,
        cursor: encodeCursor(secret!.value, p.workspaceId, heads.get(p.workspaceId) ?? 0),
        sse: share(opts.sse, i),
        session: share(opts.session, i),
        mcp: share(opts.mcp, i),
      })),
    };
    const configFile = path.join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(config));
    const child = fork(path.join(ROOT, 'bench', 'waiters-load.mjs'), [configFile], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    load = child;
    const next = <T>(type: string) => nextMessage<T>(child, type);
    const ready = await next<{ opened: number; failures: string[]; ms: number }>('ready');
    const waiters = opts.sse + opts.session + opts.mcp;
    if (ready.failures.length > 0) console.error('[bench] waiters that failed to open, e.g.:', ready.failures);
    const open = await rssMiB(ours.pid);
    const openHeap = await heap();

    const idle = await idleWindow();

    // Deliveries.
    child.send({ type: 'reset' });
    const startHeads = new Map(heads);
    for (const r of await bench<{ workspace_id: string; sequence: string }[]>`select workspace_id, sequence from ledger_heads`) {
      startHeads.set(r.workspace_id, Number(r.sequence));
    }
    const pending = await bench<{ id: string; workspace_id: string }[]>`
      select id, workspace_id from decisions where status = 'pending' order by random() limit ${opts.approvals}`;
    const sessionOf = new Map(people.map((p) => [p.workspaceId, p.session]));
    const writes = Math.round(opts.seconds * opts.writesPerSecond);
    const approvalEvery = (opts.seconds * 1000) / Math.max(1, pending.length);
    const writeEvery = 1000 / opts.writesPerSecond;
    const began = performance.now();
    const writer = (async () => {
      for (let i = 0; i < writes; i++) {
        await sleep(began + i * writeEvery - performance.now());
        const ws = people[i % n]!;
        const res = await fetch(`${ours.url}/api/v1/work`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${ws.apiKey}` },
          body: WORK_BODY,
        });
        await res.arrayBuffer();
        if (res.status !== 201) throw new Error(`POST /work answered ${res.status}`);
      }
    })();
    const approver = (async () => {
      for (const [i, d] of pending.entries()) {
        await sleep(began + i * approvalEvery - performance.now());
        const res = await fetch(`${ours.url}/api/v1/decisions/${d.id}/approve`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            cookie: `${cookieName}=${sessionOf.get(d.workspace_id)}`,
            origin: ours.url,
          },
          body: '{}',
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`POST /decisions/{id}/approve answered ${res.status}`);
      }
    })();
    await Promise.all([writer, approver]);
    // Let the last deliveries arrive.
    await sleep(3_000);
    child.send({ type: 'report' });
    const report = await next<{ sseLatencies: number[]; mcpLatencies: number[]; sseEvents: number; mcpAnswers: number }>('report');
    const peak = await rssMiB(ours.pid);

    let sseExpected = 0;
    const endHeads = await bench<{ workspace_id: string; sequence: string }[]>`select workspace_id, sequence from ledger_heads`;
    for (const [i, w] of config.workspaces.entries()) {
      const moved = Number(endHeads.find((r) => r.workspace_id === w.workspaceId)?.sequence ?? 0) - (startHeads.get(w.workspaceId) ?? 0);
      sseExpected += moved * (w.sse + w.session);
      void i;
    }
    return {
      waiters,
      openSeconds: ready.ms / 1000,
      openFailures: waiters - ready.opened,
      rssMiB: open.now,
      peakRssMiB: peak.peak,
      heap: openHeap,
      idleRssMiB: idleRss,
      idleQueries: idle.transactions,
      idleBaselineQueries: baseline.transactions,
      idleScans: idle.scans,
      idleBaselineScans: baseline.scans,
      sseP50: percentile(report.sseLatencies, 50),
      sseP99: percentile(report.sseLatencies, 99),
      sseDelivered: report.sseEvents,
      sseExpected,
      mcpP50: percentile(report.mcpLatencies, 50),
      mcpP99: percentile(report.mcpLatencies, 99),
      mcpAnswered: report.mcpAnswers,
      allP99: percentile([...report.sseLatencies, ...report.mcpLatencies], 99),
    };
  } finally {
    if (load && load.exitCode === null) {
      load.send({ type: 'stop' });
      await new Promise((r) => setTimeout(r, 500));
      load.kill('SIGKILL');
    }
    await bench.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    await ours.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
