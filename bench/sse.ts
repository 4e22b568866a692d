/**
 * SSE under load: `leases` concurrent leases of GET /api/v1/events/stream?format=sse on one
 * workspace, read with raw node:http streams and a minimal SSE parser (a thousand EventSource
 * objects would cost the load generator more than the server).
 *
 * 1. Idle cost: the bench database's transactions (xact_commit + xact_rollback in
 *    pg_stat_database) over a window with the leases open and idle, against a window of the same
 *    length before they were opened (the background jobs run queries in both), and the scans of
 *    the tables leases read over the same windows.
 * 2. Commit-to-delivery: one writer appends at a steady rate (POST /api/v1/work) for `seconds`;
 *    for every event each lease receives, latency = arrival time − the event's occurredAt (same
 *    clock; conservative, since occurredAt is taken before the commit).
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { encodeCursor } from '@/server/ledger/cursor';
import { ADMIN_URL, percentile, WORK_BODY, type BenchDb, type BenchWorkspace } from './lib';

export interface SseResult {
  /** Commit-to-delivery latency over every delivered event, ms. */
  deliveryP50: number;
  deliveryP99: number;
  /** Events received (each lease counts each event once) and leases × events appended. */
  delivered: number;
  expected: number;
  /** Transactions in the bench database during the idle window with the leases open… */
  idleQueries: number;
  /** …and during a window of the same length with no lease open. */
  idleBaselineQueries: number;
  /**
   * The same two windows counted as scans of the tables a lease reads (ledger_events,
   * ledger_heads, api_keys in pg_stat_user_tables): the background jobs touch none of them, so
   * this pair has no noise (the transaction counts move by a sweep or two either way).
   */
  idleLedgerReads: number;
  idleBaselineLedgerReads: number;
}

export interface SseOptions {
  /** Length of each idle window (default 5 s). */
  idleSeconds?: number;
  /**
   * Quiet time before each idle window (default 11 s): PostgreSQL publishes a backend's counters
   * up to 10 s after its last transaction, so opening the leases must not leak into the window.
   */
  settleSeconds?: number;
  /** Appends a second during the delivery phase (default 20). */
  ratePerSecond?: number;
  /**
   * Where the writer sends POST /work (default: the leases' server). Another instance on the same
   * database measures delivery across instances: the commit reaches the leases by NOTIFY.
   */
  writeUrl?: string;
  /** False skips both idle windows (their figures are then NaN): delivery only. */
  idle?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

interface Lease {
  request: http.ClientRequest;
  opened: Promise<void>;
  /** Highest sequence received, and how many events of the measured range arrived. */
  last: number;
  count: number;
  ended: boolean;
}

export async function measureSse(
  baseUrl: string,
  db: BenchDb,
  workspace: BenchWorkspace,
  leases: number,
  seconds: number,
  opts: SseOptions = {},
): Promise<SseResult> {
  const idleMs = (opts.idleSeconds ?? 5) * 1000;
  const settleMs = (opts.settleSeconds ?? 11) * 1000;
  const rate = opts.ratePerSecond ?? 20;
  const writeUrl = opts.writeUrl ?? baseUrl;
  const measureIdle = opts.idle ?? true;
  const noWindow = { transactions: NaN, scans: NaN };

  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => undefined });
  const bench = postgres(db.url, { max: 1, onnotice: () => undefined });
  const open: Lease[] = [];
  try {
    const transactions = async (): Promise<number> => {
      const [row] = await admin<{ n: string }[]>`
        select xact_commit + xact_rollback as n from pg_stat_database where datname = ${db.name}`;
      return Number(row!.n);
    };
    const leaseTableScans = async (): Promise<number> => {
      const [row] = await bench<{ n: string }[]>`
        select coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0) as n from pg_stat_user_tables
        where relname in ('ledger_events', 'ledger_heads', 'api_keys')`;
      return Number(row!.n);
    };
    /** Transactions and lease-table scans over `idleMs` (this probe's own transactions fall outside). */
    const idleWindow = async (): Promise<{ transactions: number; scans: number }> => {
      const s0 = await leaseTableScans();
      await sleep(200);
      const x0 = await transactions();
      await sleep(idleMs);
      const x1 = await transactions();
      const s1 = await leaseTableScans();
      return { transactions: x1 - x0, scans: s1 - s0 };
    };
    const head = async (): Promise<number> => {
      const [row] = await bench<{ sequence: string }[]>`select sequence from ledger_heads where workspace_id = ${workspace.workspaceId}`;
      return Number(row!.sequence);
    };
    // Leases start at the head (the workspace may hold a long ledger from earlier parts): its
    // cursor is signed with the instance's own secret, read from the database.
    const [secret] = await bench<{ value: string }[]>`select value from instance_secrets where name = 'cursor_hmac'`;
    const startSeq = await head();
    const cursor = encodeCursor(secret!.value, workspace.workspaceId, startSeq);

    // Baseline: nothing open.
    if (measureIdle) await sleep(settleMs);
    const baseline = measureIdle ? await idleWindow() : noWindow;

    // Open every lease (at most 100 opening at once) and wait until each has sent its first frame.
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const leaseMs = Math.min(300_000, settleMs + idleMs + seconds * 1000 + 120_000);
    const url = new URL(`/api/v1/events/stream?format=sse&lease_ms=${leaseMs}&poll_ms=10000&cursor=${encodeURIComponent(cursor)}`, baseUrl);
    const latencies: number[] = [];
    const occurredAt = new Map<number, number>();
    const openOne = (): Lease => {
      let resolveOpened!: () => void;
      let rejectOpened!: (err: Error) => void;
      const opened = new Promise<void>((resolve, reject) => {
        resolveOpened = resolve;
        rejectOpened = reject;
      });
      const lease: Lease = { request: null as unknown as http.ClientRequest, opened, last: startSeq, count: 0, ended: false };
      const onFrame = (frame: string, arrived: number) => {
        if (frame.startsWith('retry:')) return resolveOpened();
        if (frame.startsWith(':')) return;
        if (frame.startsWith('id: ')) {
          const sequence = Number(/"sequence":(\d+)/.exec(frame)?.[1]);
          if (!(sequence > lease.last)) return;
          lease.last = sequence;
          lease.count++;
          let at = occurredAt.get(sequence);
          if (at === undefined) {
            at = Date.parse(/"occurredAtCanonical":"([^"]+)"/.exec(frame)?.[1] ?? '');
            occurredAt.set(sequence, at);
          }
          latencies.push(arrived - at);
        } else if (frame.startsWith('event: lease_end')) lease.ended = true;
      };
      lease.request = http.get(url, { agent, headers: { authorization: `Bearer ${workspace.apiKey}` } }, (res) => {
        if (res.statusCode !== 200) {
          rejectOpened(new Error(`SSE lease answered ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          const arrived = Date.now();
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            onFrame(buffer.slice(0, end), arrived);
            buffer = buffer.slice(end + 2);
          }
        });
        res.on('error', () => undefined);
        res.on('end', () => {
          lease.ended = true;
        });
      });
      lease.request.on('error', (err) => {
        lease.ended = true;
        rejectOpened(err);
      });
      return lease;
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(100, leases) }, async () => {
        while (next < leases) {
          next++;
          const lease = openOne();
          open.push(lease);
          await lease.opened;
        }
      }),
    );

    // Idle with every lease open.
    if (measureIdle) await sleep(settleMs);
    const idle = measureIdle ? await idleWindow() : noWindow;

    // Deliveries: one writer at a steady rate.
    latencies.length = 0;
    const total = Math.round(seconds * rate);
    const interval = 1000 / rate;
    const began = performance.now();
    for (let i = 0; i < total; i++) {
      await sleep(began + i * interval - performance.now());
      const res = await fetch(`${writeUrl}/api/v1/work`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${workspace.apiKey}`,
          'idempotency-key': `bench-sse-${randomUUID()}`,
        },
        body: WORK_BODY,
      });
      await res.arrayBuffer();
      if (res.status !== 201) throw new Error(`POST /work answered ${res.status}`);
    }
    const endSeq = await head();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && open.some((l) => l.last < endSeq && !l.ended)) await sleep(50);

    // (A background job appending after the range would count, hence the cap.)
    const delivered = open.reduce((sum, l) => sum + Math.min(l.count, endSeq - startSeq), 0);
    return {
      deliveryP50: percentile(latencies, 50),
      deliveryP99: percentile(latencies, 99),
      delivered,
      expected: leases * (endSeq - startSeq),
      idleQueries: idle.transactions,
      idleBaselineQueries: baseline.transactions,
      idleLedgerReads: idle.scans,
      idleBaselineLedgerReads: baseline.scans,
    };
  } finally {
    for (const lease of open) lease.request.destroy();
    await bench.end().catch(() => undefined);
    await admin.end();
  }
}
