/**
 * The retention job against an hour of keyed writes (docs/contract.md §13.4, §14): does idempotency_records hold only
 * the last TTL's records once it has run, and what does its cleanup cost the writes beside it?
 *
 * An hour of POST /work at the rate the bench measured is written straight into the table (an
 * hour of real writes would take an hour): one record per write, with the response body ours
 * stores for POST /work, spread over the past hour. The TTL is shortened for the measure: each
 * record expires TTL_MINUTES after its write (IDEMPOTENCY_TTL_HOURS cannot go below 24, and a day
 * of records would not fit this machine's disk), so five sixths of the hour are expired. Then the
 * job (server/retention.ts runRetention, as the server's background job runs it) deletes them while
 * 32 clients go on writing to ours, and the table is counted.
 */
import postgres from 'postgres';
import { createRuntime } from '@/server/runtime';
import { parseEnv } from '@/server/env';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { releaseLease, takeLease } from '@/server/job-lease';
import { runRetention, type RetentionReport } from '@/server/retention';
import { fmt, loadWork, type BenchDb, type LoadResult } from './lib';

/** The shortened TTL of the measure. */
const TTL_MINUTES = 10;
/** The bench, as the retention lease's holder. */
const HOLDER = 'bench';
/** Rows per INSERT while filling (one transaction each). */
const FILL_CHUNK = 100_000;

export interface RetentionResult {
  /** Records written for the hour (the bench's write rate × 3,600). */
  hourRecords: number;
  /** How long the job took, and what it deleted. */
  seconds: number;
  report: RetentionReport;
  /** Records left after the job, and how many of them had expired when it started (the target: none). */
  left: number;
  stale: number;
  /** Records that had expired when the job started. */
  expired: number;
  /** POST /work at 32 clients before and while the job ran. */
  before: LoadResult;
  during: LoadResult[];
  tableMiB: { before: number; after: number };
}

export async function measureRetention(
  db: BenchDb,
  oursUrl: string,
  writesPerSecond: number,
  log: (m: string) => void,
): Promise<RetentionResult> {
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined, connection: { TimeZone: 'UTC' } });
  const runtime = await createRuntime(parseEnv({ DATABASE_URL: db.url, SEED_DEMO: 'false', LOG_LEVEL: 'warn' }));
  try {
    const hourRecords = Math.round(writesPerSecond * 3600);
    // A stored POST /work response of ours, so the rows are the size real ones are.
    const [sample] = await sql`select fingerprint, response_body::text as body from idempotency_records
                                where response_status = 201 order by created_at desc limit 1`;
    if (!sample) throw new Error('no stored POST /work response to copy (run writes first)');
    const workspaces = db.workspaces.map((w) => w.workspaceId);
    // The server's own job stays out of the measure: the bench holds its lease throughout.
    while (!(await takeLease(runtime.db, 'retention', 3_600_000, HOLDER))) await new Promise((r) => setTimeout(r, 500));
    log(`retention: writing an hour of keyed writes (${hourRecords.toLocaleString('en')} records, ${TTL_MINUTES}-minute TTL)…`);
    for (let from = 0; from < hourRecords; from += FILL_CHUNK) {
      const to = Math.min(hourRecords, from + FILL_CHUNK) - 1;
      await sql`
        insert into idempotency_records (workspace_id, key, fingerprint, response_status, response_body, created_at, expires_at)
        select (${workspaces}::uuid[])[1 + i % ${workspaces.length}], 'bench-hour-' || i, ${sample.fingerprint as string}, 201,
               ${sample.body as string}::jsonb, at, at + make_interval(mins => ${TTL_MINUTES})
          from generate_series(${from}::int, ${to}::int) as i,
               lateral (select now() - interval '1 hour' + make_interval(secs => i * 3600.0 / ${hourRecords})) as t(at)`;
    }
    await sql`vacuum analyze idempotency_records`;
    const sizeOf = async () => Number((await sql`select pg_total_relation_size('idempotency_records') as b`)[0]!.b) / 2 ** 20;
    const tableMiB = { before: await sizeOf(), after: 0 };
    // What counts as now for the job: everything that expired before it must go.
    const now = new Date();
    const [{ n: expired }] = (await sql`select count(*)::int as n from idempotency_records
                                         where expires_at < ${now.toISOString()}::timestamptz`) as unknown as [{ n: number }];

    log('retention: POST /work at 32 clients, then again while the job runs…');
    const before = await loadWork(oursUrl, db.workspaces, 32, 10);
    const settings = { deliveryLogDays: runtime.env.DELIVERY_LOG_DAYS, attemptLimits: attemptLimitsOf(runtime) };
    const started = performance.now();
    let finished = false;
    const job = runRetention(runtime.db, settings, { holder: HOLDER, now }).then((report) => {
      finished = true;
      return { report: report!, seconds: (performance.now() - started) / 1000 };
    });
    const during: LoadResult[] = [];
    while (!finished) during.push(await loadWork(oursUrl, db.workspaces, 32, 5));
    const { report, seconds } = await job;
    const [{ left, stale }] = (await sql`select count(*)::int as left,
                                                count(*) filter (where expires_at < ${now.toISOString()}::timestamptz)::int as stale
                                           from idempotency_records`) as unknown as [{ left: number; stale: number }];
    tableMiB.after = await sizeOf();
    return { hourRecords, seconds, report, left, stale, expired, before, during, tableMiB };
  } finally {
    await releaseLease(runtime.db, 'retention', HOLDER).catch(() => undefined);
    await runtime.close();
    await sql.end();
  }
}

/** The measure as report lines (a table). */
export function retentionLines(r: RetentionResult): string[] {
  const rps = r.during.reduce((sum, d) => sum + d.rps, 0) / r.during.length;
  const p99 = Math.max(...r.during.map((d) => d.p99));
  return [
    `## Retention: an hour of keyed writes (${r.hourRecords.toLocaleString('en')} records, ${TTL_MINUTES}-minute TTL)`,
    '',
    '| measure | value |',
    '| --- | --: |',
    `| expired records deleted, batches | ${r.report.idempotency_records.toLocaleString('en')} of ${r.expired.toLocaleString('en')}, ${r.report.batches} |`,
    `| job time, rows/s | ${fmt(r.seconds, 1)} s, ${fmt(r.report.idempotency_records / r.seconds)} |`,
    `| records left, of them expired | ${r.left.toLocaleString('en')}, ${r.stale} |`,
    `| POST /work 32 clients before / during the job | ${fmt(r.before.rps)} / ${fmt(rps)} req/s (${fmt(rps / r.before.rps, 2)} ×), p99 ${fmt(r.before.p99)} / ${fmt(p99)} ms |`,
    `| table size before / after (until autovacuum reuses it) | ${fmt(r.tableMiB.before)} / ${fmt(r.tableMiB.after)} MiB |`,
    '',
  ];
}

/** The target (docs/contract.md §13.4, §14): none of the records left had expired. */
export function retentionCheck(r: RetentionResult): [string, boolean, string] {
  return ["after an hour of keyed writes, idempotency_records holds only the last TTL's records", r.stale === 0, `${r.stale} expired left`];
}
