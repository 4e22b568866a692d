/**
 * The ledger's read side and its verification, measured on a large ledger:
 *
 * - `fillLedger` appends valid events to one workspace quickly (generated here with the service's
 *   own canonical form and hash, streamed with COPY, the head moved in the same transaction);
 * - `measureEventsPage` reads pages of 100 events at random positions, over HTTP
 *   (GET /api/v1/events/stream) and as the bare SQL query the service runs;
 * - `measureChainVerify` times the service's chain verifier (CPU only, one core).
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { and, asc, eq, gt } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { openDatabase } from '@/db';
import { ledgerEvents } from '@/db/schema';
import { EMPTY_CONTEXT_MANIFEST_DIGEST } from '@/server/domain/actor';
import type { ReceiptView, TaskView } from '@/server/domain/work/create-work';
import { inboxIds } from '@/server/domain/workspaces/ids';
import { CURRENT_SCHEMA_VERSION } from '@/server/ledger/append';
import { digestOf, eventCanonicalSegments, joinCanonicalSegments, type UnsealedEvent } from '@/server/ledger/canonical';
import { encodeCursor } from '@/server/ledger/cursor';
import { EVENT_COPY_SELECT, EVENT_TEXT_COLUMNS } from '@/server/ledger/event-rows';

/**
 * How a fill keeps the payload: as its canonical text (`text`, as the append does since migration
 * 0021) or as jsonb (`jsonb`, as it did before: the baseline of the storage comparison).
 */
export type PayloadLayout = 'text' | 'jsonb';

/** The columns a fill writes: EVENT_TEXT_COLUMNS, the payload in the layout's column. */
const fillColumns = (layout: PayloadLayout) =>
  EVENT_TEXT_COLUMNS.filter((c) => c !== 'payload_canonical').map((c) => (c === 'payload' && layout === 'text' ? 'payload_text' : c));
import { readEventRows, readHead } from '@/server/ledger/read';
import { ChainVerifier } from '@/server/ledger/chain';
import { percentile, ROOT, WORK_BODY, type BenchDb, type BenchWorkspace } from './lib';

const PAGE = 100;

/** The service's int8 handling (db/postgres.ts): sequences come back as numbers. */
const INT8_AS_NUMBER = {
  int8: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) },
};

// ---------------------------------------------------------------------------------------------
// Filling

const COPY_SPECIAL = /[\\\n\r\t]/;
const COPY_SPECIAL_ALL = /[\\\n\r\t]/g;
const COPY_REPLACEMENTS: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A value in COPY's text format. */
function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  const text = String(value);
  return COPY_SPECIAL.test(text) ? text.replace(COPY_SPECIAL_ALL, (c) => COPY_REPLACEMENTS[c]!) : text;
}

interface FillContext {
  workspaceId: string;
  keyId: string;
  ownerId: string;
  /** The head the new events continue from. */
  sequence: number;
  hash: string;
}

/**
 * The COPY rows of `count` `work.created` events continuing the chain of `ctx` (which is advanced
 * as rows are produced), `batch` rows per chunk. Each event is what POST /work appends for the
 * benchmark's work body, sent with an API key and an Idempotency-Key: a new task in the Inbox and
 * its receipt (no task rows are written; nothing reads them here). The hash is finished exactly as
 * ledger_append does it (drizzle/0001_ledger_guard.sql): sha256 over the four canonical segments
 * joined around aggregateVersion, previousHash and sequence.
 */
function* copyRows(ctx: FillContext, count: number, layout: PayloadLayout, batch = 500): Generator<string> {
  const body = JSON.parse(WORK_BODY) as { title: string; description: string; priority: TaskView['priority'] };
  const inbox = inboxIds(ctx.workspaceId);
  const aggregateVersion = 1; // every event creates a new task aggregate
  let lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = new Date().toISOString();
    const task: TaskView = {
      id: randomUUID(),
      initiative_id: inbox.initiativeId,
      workstream_id: inbox.workstreamId,
      milestone_id: inbox.milestoneId,
      position: 0,
      title: body.title,
      description: body.description,
      status: 'todo',
      priority: body.priority,
      type: 'build',
      estimate_hours: null,
      agent_id: null,
      depends_on: [],
      created_at: at,
      updated_at: at,
    };
    const receipt: ReceiptView = { id: randomUUID(), task_id: task.id, status: 'completed', summary: body.title, created_at: at };
    const payload = { task, receipt };
    const requestId = randomUUID();
    const event: UnsealedEvent = {
      id: randomUUID(),
      workspaceId: ctx.workspaceId,
      ownerId: ctx.ownerId,
      aggregateType: 'task',
      aggregateId: task.id,
      eventType: 'work.created',
      schemaVersion: CURRENT_SCHEMA_VERSION,
      actorType: 'api_key',
      actorId: ctx.keyId,
      payload,
      payloadDigest: digestOf(payload),
      occurredAtCanonical: at,
      idempotencyKey: `bench-fill-${requestId}`,
      causationId: requestId,
      correlationId: requestId,
      contextManifestDigest: EMPTY_CONTEXT_MANIFEST_DIGEST,
    };
    const sequence = ctx.sequence + 1;
    const cut = eventCanonicalSegments(event);
    const canonical = joinCanonicalSegments(cut, aggregateVersion, ctx.hash, sequence);
    const eventHash = `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
    // In fillColumns order.
    const row: (string | number | null)[] = [
      event.id,
      event.workspaceId,
      sequence,
      event.ownerId,
      event.aggregateType,
      event.aggregateId,
      aggregateVersion,
      event.eventType,
      event.schemaVersion,
      event.actorType,
      event.actorId,
      layout === 'text' ? cut.payloadText : JSON.stringify(payload),
      event.payloadDigest,
      event.occurredAtCanonical,
      event.idempotencyKey,
      event.causationId,
      event.correlationId,
      event.contextManifestDigest,
      ctx.hash,
      eventHash,
    ];
    lines.push(row.map(copyField).join('\t'));
    ctx.sequence = sequence;
    ctx.hash = eventHash;
    if (lines.length === batch) {
      yield lines.join('\n') + '\n';
      lines = [];
    }
  }
  if (lines.length > 0) yield lines.join('\n') + '\n';
}

/**
 * Appends `count` valid `work.created` events to `workspace`'s ledger, continuing from its head:
 * in one transaction that holds the head row's lock (as ledger_append does, so service appends
 * wait instead of interleaving), the rows are streamed with COPY and the head is moved forward to
 * the last one (the head's trigger allows only forward moves; ledger_events only takes inserts).
 * `seconds` is the whole fill, generation and commit included; VACUUM (ANALYZE) runs afterwards, untimed.
 */
export async function fillLedger(
  db: BenchDb,
  workspace: BenchWorkspace,
  count: number,
  layout: PayloadLayout = 'text',
): Promise<{ seconds: number }> {
  if (!Number.isSafeInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined, connection: { TimeZone: 'UTC' } });
  try {
    const started = performance.now();
    await sql.begin(async (tx) => {
      const [head] = await tx<{ sequence: string; head_hash: string }[]>`
        select sequence::text as sequence, head_hash from ledger_heads where workspace_id = ${workspace.workspaceId} for update`;
      if (!head) throw new Error(`no ledger head for workspace ${workspace.workspaceId}`);
      const [key] = await tx<{ id: string; owner_user_id: string }[]>`
        select id, owner_user_id from api_keys where secret_hash = ${workspace.keyHash} and workspace_id = ${workspace.workspaceId}`;
      if (!key) throw new Error(`no API key for workspace ${workspace.workspaceId}`);
      const ctx: FillContext = {
        workspaceId: workspace.workspaceId,
        keyId: key.id,
        ownerId: key.owner_user_id,
        sequence: Number(head.sequence),
        hash: head.head_hash,
      };
      if (count === 0) return;
      const copy = await tx.unsafe(`copy ledger_events (${fillColumns(layout).join(', ')}) from stdin`).writable();
      await pipeline(Readable.from(copyRows(ctx, count, layout)), copy);
      await tx`update ledger_heads set sequence = ${ctx.sequence}, head_hash = ${ctx.hash}, updated_at = now()
               where workspace_id = ${workspace.workspaceId}`;
    });
    const seconds = (performance.now() - started) / 1000;
    // The state autovacuum leaves a ledger that grew this much in: fresh planner statistics, and
    // the new rows vacuumed. Left to autovacuum, that vacuum of up to a million rows would run
    // during the page measurements that follow and take the CPU they are timed on.
    await sql`vacuum (analyze) ledger_events`;
    return { seconds };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

// ---------------------------------------------------------------------------------------------
// Reading pages

export interface PageFigures {
  /** GET /api/v1/events/stream?limit=100&cursor=…, request to last byte, ms. */
  httpP50: number;
  httpP99: number;
  /** The service's own query (server/ledger/read.ts) sent with postgres.js as a prepared statement, ms. */
  sqlP50: number;
  sqlP99: number;
  /** The same query unprepared, as Drizzle sends it in the service (parse + bind + execute each time), ms. */
  sqlUnpreparedP50: number;
  /** The EXPLAIN of one page read, in one line. */
  plan: string;
  /** True when the plan reads the primary-key index from the cursor onwards with no sort. */
  indexRangeRead: boolean;
  /** Events in the ledger when measured. */
  events: number;
}

interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export function httpGet(agent: http.Agent, url: string, headers: Record<string, string>): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/**
 * Pages of 100 events read at `samples` random positions of `workspace`'s ledger (positions where a
 * full page exists), one request at a time: over HTTP with the workspace's API key, and as the
 * service's own SELECT sent directly. Cursors are signed with the instance secret (`cursor_hmac`)
 * exactly as the service signs them, so any position can be read without walking the ledger.
 * The HTTP answers are checked (status, 100 events, the right first sequence) after timing.
 */
export async function measureEventsPage(baseUrl: string, db: BenchDb, workspace: BenchWorkspace, samples: number): Promise<PageFigures> {
  const sql = postgres(db.url, {
    max: 1,
    onnotice: () => undefined,
    connection: { TimeZone: 'UTC', default_transaction_isolation: 'read committed' },
    types: INT8_AS_NUMBER,
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const [secret] = await sql<{ value: string }[]>`select value from instance_secrets where name = 'cursor_hmac'`;
    if (!secret) throw new Error('instance secret cursor_hmac missing (the service creates it when it starts)');
    const [head] = await sql<{ sequence: number }[]>`select sequence from ledger_heads where workspace_id = ${workspace.workspaceId}`;
    const events = head?.sequence ?? 0;
    if (events < PAGE + 1) throw new Error(`the ledger has ${events} events; pages need more than ${PAGE}`);
    const positions = Array.from({ length: samples }, () => Math.floor(Math.random() * (events - PAGE)));

    // The statement readEvents builds (server/ledger/read.ts), limit + 1 as the events router asks.
    const orm = drizzle(sql);
    const statement = (after: number) =>
      orm
        .select()
        .from(ledgerEvents)
        .where(and(eq(ledgerEvents.workspaceId, workspace.workspaceId), gt(ledgerEvents.sequence, after)))
        .orderBy(asc(ledgerEvents.sequence))
        .limit(PAGE + 1)
        .toSQL();

    const runSql = async (after: number, prepare: boolean) => {
      const { sql: text, params } = statement(after);
      const t0 = performance.now();
      const rows = await sql.unsafe(text, params as never[], { prepare });
      const ms = performance.now() - t0;
      if (rows.length !== PAGE + 1 && after + PAGE + 1 <= events) throw new Error(`SQL page at ${after} returned ${rows.length} rows`);
      return ms;
    };
    const headers = { authorization: `Bearer ${workspace.apiKey}`, accept: 'application/json' };
    const pageUrl = (after: number) =>
      `${baseUrl}/api/v1/events/stream?limit=${PAGE}&cursor=${encodeCursor(secret.value, workspace.workspaceId, after)}`;
    const runHttp = async (after: number) => {
      const url = pageUrl(after);
      const t0 = performance.now();
      const answer = await httpGet(agent, url, headers);
      const ms = performance.now() - t0;
      return { ms, answer };
    };
    const check = (after: number, answer: HttpAnswer) => {
      if (answer.status !== 200) throw new Error(`GET /events/stream answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      const page = JSON.parse(answer.body) as { data: { sequence: number }[] };
      if (page.data.length !== PAGE || page.data[0]!.sequence !== after + 1) {
        throw new Error(`GET /events/stream at ${after} gave ${page.data.length} events from ${page.data[0]?.sequence}`);
      }
    };

    // Warm up both paths (connections, JIT, plan caches) on positions of their own.
    const warm = Math.min(50, Math.max(10, Math.floor(samples / 10)));
    for (let i = 0; i < warm; i++) {
      const after = Math.floor(Math.random() * (events - PAGE));
      check(after, (await runHttp(after)).answer);
      await runSql(after, true);
      await runSql(after, false);
    }

    const httpMs: number[] = [];
    const answers: [number, HttpAnswer][] = [];
    for (const after of positions) {
      const { ms, answer } = await runHttp(after);
      httpMs.push(ms);
      answers.push([after, answer]);
    }
    for (const [after, answer] of answers) check(after, answer);
    answers.length = 0;
    const sqlMs: number[] = [];
    for (const after of positions) sqlMs.push(await runSql(after, true));
    const unpreparedMs: number[] = [];
    for (const after of positions) unpreparedMs.push(await runSql(after, false));

    const middle = Math.floor((events - PAGE) / 2);
    const { sql: text, params } = statement(middle);
    const [explained] = await sql.unsafe<{ 'QUERY PLAN': { Plan: PlanNode; 'Execution Time': number }[] }[]>(
      `explain (analyze, buffers, format json) ${text}`,
      params as never[],
    );
    const root = explained!['QUERY PLAN'][0]!;
    const nodes = planNodes(root.Plan);
    const scan = nodes.find((n) => n['Relation Name'] === 'ledger_events');
    const indexRangeRead =
      !!scan &&
      (scan['Node Type'] === 'Index Scan' || scan['Node Type'] === 'Index Only Scan') &&
      scan['Index Name'] === 'ledger_events_workspace_id_sequence_pk' &&
      /sequence > /.test(scan['Index Cond'] ?? '') &&
      !nodes.some((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Seq Scan');
    const plan =
      nodes
        .map((n) =>
          [
            n['Node Type'],
            n['Index Name'] && `using ${n['Index Name']}`,
            n['Index Cond'] && `(${n['Index Cond']})`,
            `rows=${n['Actual Rows']}`,
          ]
            .filter(Boolean)
            .join(' '),
        )
        .join(' -> ') +
      `; buffers hit=${scan?.['Shared Hit Blocks'] ?? 0} read=${scan?.['Shared Read Blocks'] ?? 0}` +
      `; execution ${root['Execution Time'].toFixed(3)} ms`;

    return {
      httpP50: percentile(httpMs, 50),
      httpP99: percentile(httpMs, 99),
      sqlP50: percentile(sqlMs, 50),
      sqlP99: percentile(sqlMs, 99),
      sqlUnpreparedP50: percentile(unpreparedMs, 50),
      plan,
      indexRangeRead,
      events,
    };
  } finally {
    agent.destroy();
    await sql.end({ timeout: 5 });
  }
}

// ---------------------------------------------------------------------------------------------
// Verifying

/**
 * Chain verification throughput on one core: the workspace's events are read with the service's
 * own reader (readEventRows, as verifyWorkspace does) in chunks of `chunk` events, untimed, and only
 * ChainVerifier.push over each chunk in memory is timed (payload digest, previous-hash link and
 * event hash of every event; one thread, synchronous, so one core). `eventsPerSecond` divides by
 * the process's CPU time over the timed loops (user + system, all threads: at least the main
 * thread's, so never flattering), which a busy machine does not inflate the way it inflates wall
 * time; `wallEventsPerSecond` divides by wall time. At most `maxEvents` events (all by default);
 * when the whole chain is read, the recorded head must match too. Throws when the chain does not
 * verify.
 */
export async function measureChainVerify(
  db: BenchDb,
  workspace: BenchWorkspace,
  opts: { maxEvents?: number; chunk?: number } = {},
): Promise<{ eventsPerSecond: number; events: number; wallEventsPerSecond: number }> {
  const handle = await openDatabase({ url: db.url, poolMax: 1 });
  try {
    const head = await readHead(handle.db, workspace.workspaceId);
    const end = Math.min(head?.sequence ?? 0, opts.maxEvents ?? Infinity);
    const chunk = opts.chunk ?? 50_000;
    const verifier = new ChainVerifier();
    const broken = () => new Error(`chain of ${workspace.workspaceId} broken: ${JSON.stringify(verifier.finish().firstBreak)}`);
    let after = 0;
    let wallMs = 0;
    let cpuMicros = 0;
    while (after < end) {
      // Text rows, as the service's verifiers read them: a payload kept as its canonical text is hashed as it is.
      const rows = await readEventRows(handle.db, workspace.workspaceId, { after, limit: Math.min(chunk, end - after) });
      if (rows.length === 0) break;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      let ok = true;
      for (const row of rows) if (!(ok = verifier.pushRow(row))) break;
      wallMs += performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      cpuMicros += cpu.user + cpu.system;
      if (!ok) throw broken();
      after = Number(rows[rows.length - 1]!.sequence);
    }
    const report = verifier.finish(head && after === head.sequence ? head : undefined);
    if (!report.verified) throw broken();
    return {
      eventsPerSecond: report.checkedEvents / (cpuMicros / 1e6),
      events: report.checkedEvents,
      wallEventsPerSecond: report.checkedEvents / (wallMs / 1000),
    };
  } finally {
    await handle.close();
  }
}

/**
 * One of the service's command-line tools (scripts/<script>) as a user runs it: a process of its
 * own (node scripts/tool.mjs <name>, as npm's script runs it), its wall-clock seconds and its peak
 * resident memory, polled from /proc (VmHWM is the high-water mark, so the last reading before
 * exit holds it within 100 ms).
 */
async function runTool(
  db: BenchDb,
  script: string,
  args: string[],
): Promise<{ stdout: string; stderr: string; seconds: number; peakRssMiB: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [path.join('scripts', 'tool.mjs'), path.basename(script, '.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let peakKb = 0;
  const poll = setInterval(() => {
    try {
      const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
      peakKb = Math.max(peakKb, kb);
    } catch {
      // exited between two polls
    }
  }, 100);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearInterval(poll);
  if (code !== 0) throw new Error(`${script} ${args.join(' ')} exited ${code}: ${stdout.slice(-500)} ${stderr.slice(-500)}`);
  return { stdout, stderr, seconds: (performance.now() - started) / 1000, peakRssMiB: peakKb / 1024 };
}

/** A ledger:verify --json report's count and the seconds it says verification took. */
function verifyFigures(stdout: string): { checkedEvents: number; seconds: number } {
  return JSON.parse(stdout) as { checkedEvents: number; seconds: number };
}

/**
 * `npm run ledger:verify -- --workspace <id>` on the whole ledger: its events a second (the
 * reads included: the figure a user waits for) and its peak resident memory.
 */
export async function measureVerifyCli(
  db: BenchDb,
  workspace: BenchWorkspace,
  workers: number,
): Promise<{ workers: number; eventsPerSecond: number; events: number; peakRssMiB: number }> {
  const run = await runTool(db, 'ledger-verify.ts', ['--workspace', workspace.workspaceId, '--workers', String(workers), '--json']);
  const report = verifyFigures(run.stdout);
  return { workers, eventsPerSecond: report.checkedEvents / report.seconds, events: report.checkedEvents, peakRssMiB: run.peakRssMiB };
}

/**
 * The floor this machine sets for reading a ledger out of PostgreSQL: psql's own COPY of the same
 * columns ledger:verify reads, in the same order, written to /dev/null, as a process (as the tool is
 * measured). ledger:verify cannot be faster than the bytes it must read; its ratio to this figure
 * says how much of its time is verification rather than the database's own reading.
 */
export async function measureCopyFloor(
  db: BenchDb,
  workspace: BenchWorkspace,
): Promise<{ eventsPerSecond: number; events: number; seconds: number }> {
  const select = `select ${EVENT_COPY_SELECT.join(', ')} from ledger_events where workspace_id = '${workspace.workspaceId}' order by sequence`;
  const started = performance.now();
  const child = spawn('psql', [db.url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `\\copy (${select}) to '/dev/null'`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`psql \\copy exited ${code}: ${out.slice(-500)}`);
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  try {
    const [row] = await sql<{ n: string }[]>`select count(*)::text as n from ledger_events where workspace_id = ${workspace.workspaceId}`;
    const events = Number(row?.n);
    return { eventsPerSecond: events / seconds, events, seconds };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** `npm run ledger:export` of the whole ledger to `file`: events a second (process start included), peak RSS, file size. */
export async function measureExportCli(
  db: BenchDb,
  workspace: BenchWorkspace,
  file: string,
): Promise<{ eventsPerSecond: number; peakRssMiB: number; fileMiB: number }> {
  const run = await runTool(db, 'ledger-export.ts', ['--workspace', workspace.workspaceId, '--out', file]);
  const events = Number(/^Wrote (\d+) events/m.exec(run.stderr)?.[1]);
  return { eventsPerSecond: events / run.seconds, peakRssMiB: run.peakRssMiB, fileMiB: statSync(file).size / 1024 / 1024 };
}

/** `npm run ledger:verify -- --bundle <file>`: events a second (as the report says) and peak RSS. */
export async function measureBundleVerifyCli(
  db: BenchDb,
  file: string,
  workers: number,
): Promise<{ workers: number; eventsPerSecond: number; events: number; peakRssMiB: number }> {
  const run = await runTool(db, 'ledger-verify.ts', ['--bundle', file, '--workers', String(workers), '--json']);
  const report = verifyFigures(run.stdout);
  return { workers, eventsPerSecond: report.checkedEvents / report.seconds, events: report.checkedEvents, peakRssMiB: run.peakRssMiB };
}

/**
 * Bytes a workspace's events take in ledger_events: the rows (pg_column_size of each whole row, its
 * TOASTed values as stored), per event. The two payload layouts filled side by side compare here.
 */
export async function rowBytesPerEvent(db: BenchDb, workspace: BenchWorkspace): Promise<number> {
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  try {
    const [row] = await sql<{ bytes: string }[]>`
      select avg(pg_column_size(e.*))::text as bytes from ledger_events e where e.workspace_id = ${workspace.workspaceId}`;
    return Number(row?.bytes);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
