/**
 * Scale-out: 1, 2 and 3 instances of the server (scripts/serve.mjs) on one PostgreSQL database, with
 * the same 32 clients spread evenly across the instances in use (a load balancer's round robin),
 * POST /api/v1/work over 64 workspaces. Beside throughput and p99 it records where the machine's
 * CPU went during each run (the server instances, PostgreSQL's processes, the load generator, the
 * whole machine), so a run that does not scale shows which resource was saturated. Then SSE across
 * instances: leases open on one instance, the writer on another, every commit delivered by NOTIFY.
 */
import { cpuTimeMs, fmt, loadWork, machineCpuMs, postgresCpuMs, range, repeat, type BenchDb, type Server, type Stat } from './lib';
import { measureSse, type SseResult } from './sse';

export interface ScaleRow {
  instances: number;
  rps: Stat;
  /** The highest p99 among the instances (each client's own instance decides its latency). */
  p99: Stat;
  failures: Stat;
  /** Cores in use on average during the runs: servers, PostgreSQL, the load generator, the machine. */
  serverCores: Stat;
  postgresCores: Stat;
  loadCores: Stat;
  machineCores: Stat;
}

export interface ScaleResult {
  rows: ScaleRow[];
  /** Leases on the second instance, the writer on the first. */
  crossSse: SseResult;
  cores: number;
}

/** `clients` connections shared out over `n` instances as evenly as they go. */
function share(clients: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => Math.floor(clients / n) + (i < clients % n ? 1 : 0));
}

export async function measureScaleOut(
  db: BenchDb,
  servers: Server[],
  clients: number,
  seconds: number,
  runs: number,
): Promise<ScaleResult> {
  const workspaces = db.workspaces.slice(0, 64);
  const rows: ScaleRow[] = [];
  for (let n = 1; n <= servers.length; n++) {
    const inUse = servers.slice(0, n);
    const r = await repeat(runs, async () => {
      const servers0 = inUse.reduce((sum, s) => sum + cpuTimeMs(s.pid), 0);
      const pg0 = postgresCpuMs();
      const load0 = process.cpuUsage();
      const machine0 = machineCpuMs();
      const results = await Promise.all(inUse.map((s, i) => loadWork(s.url, workspaces, share(clients, n)[i]!, seconds)));
      const machine1 = machineCpuMs();
      const load = process.cpuUsage(load0);
      const wall = seconds * 1000;
      return {
        rps: results.reduce((sum, x) => sum + x.rps, 0),
        p99: Math.max(...results.map((x) => x.p99)),
        failures: results.reduce((sum, x) => sum + x.failures, 0),
        serverCores: (inUse.reduce((sum, s) => sum + cpuTimeMs(s.pid), 0) - servers0) / wall,
        postgresCores: (postgresCpuMs() - pg0) / wall,
        loadCores: (load.user + load.system) / 1000 / wall,
        machineCores: ((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * machine1.cores,
      };
    });
    rows.push({ instances: n, ...r });
  }
  const crossSse = await measureSse(servers[1]!.url, db, db.workspaces[1]!, 200, 5, {
    writeUrl: servers[0]!.url,
    idle: false,
    settleSeconds: 0,
  });
  return { rows, crossSse, cores: machineCpuMs().cores };
}

/**
 * The scale-out table, and its check (docs/contract.md §14): two instances give at least 1.3 × one instance's
 * throughput, or the run shows which resource ran out. Here that is the machine's CPU: when two
 * instances leave no idle core time (≥ 95 % busy), a second instance on the same machine has
 * nothing to run on, and the table says who used it (servers, PostgreSQL, load generator).
 */
export function scaleReport(r: ScaleResult): { lines: string[]; check: [string, boolean, string] } {
  const lines = [
    `## Scale-out — POST /work, 32 clients over 64 workspaces spread across N instances, one PostgreSQL (${r.cores} cores)`,
    '',
    '| instances | req/s | × one | p99 ms (worst instance) | cores: servers | PostgreSQL | load generator | machine busy |',
    '| --: | --: | --: | --: | --: | --: | --: | --: |',
    ...r.rows.map(
      (row) =>
        `| ${row.instances} | ${range(row.rps)} | ${fmt(row.rps.median / r.rows[0]!.rps.median, 2)} | ${fmt(row.p99.median, 1)} | ` +
        `${fmt(row.serverCores.median, 2)} | ${fmt(row.postgresCores.median, 2)} | ${fmt(row.loadCores.median, 2)} | ${fmt(row.machineCores.median, 2)} of ${r.cores} |`,
    ),
    '',
    `SSE across instances (200 leases on instance 2, writer on instance 1, 20 appends/s): commit-to-delivery p50 / p99 ` +
      `${fmt(r.crossSse.deliveryP50, 1)} / ${fmt(r.crossSse.deliveryP99, 1)} ms, ${r.crossSse.delivered}/${r.crossSse.expected} delivered.`,
    '',
  ];
  const [one, two] = [r.rows[0]!, r.rows[1]!];
  const gain = two.rps.median / one.rps.median;
  const saturated = two.machineCores.median >= 0.95 * r.cores;
  const check: [string, boolean, string] = [
    'two instances ≥ 1.3 × one instance, or the machine’s CPU saturated with two',
    gain >= 1.3 || saturated,
    `${fmt(gain, 2)} ×; machine ${fmt(one.machineCores.median, 2)} → ${fmt(two.machineCores.median, 2)} of ${r.cores} cores busy with one → two instances`,
  ];
  return { lines, check };
}
