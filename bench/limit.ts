/**
 * The limit: pgbench running exactly the SQL our POST /api/v1/work sends to PostgreSQL, as fast as
 * PostgreSQL can take it from a C client on the same machine.
 *
 * The statements are not copied by hand: `captureSample` runs our real code path once against the
 * bench database, opened by openDatabase with a logger (authenticateApiKey, then in one transaction
 * claimIdempotencyKey, createWork, storeSealedResponseAtCommit, committed) and records each statement's
 * text and parameters exactly as drizzle hands them to postgres.js. The pgbench script is that text
 * with every `$n` replaced by a pgbench variable holding the same value, so a change to our SQL
 * changes the limit with it. Per transaction (one pgbench script per workspace, chosen at random):
 *
 *   our request                                              pgbench script
 *   1. auth + rate-limit counter (api-keys.ts), no tx   →   the same statement, outside BEGIN/COMMIT
 *   2. begin (db/postgres.ts, sent with the next one)    →   BEGIN                          } one
 *   3. idempotency claim (idempotency.ts)               →   the same statement, a fresh key } pipeline
 *   4. insert task + receipt (create-work.ts)           →   the same statement, fresh ids   } (flight)
 *   5. select * from ledger_append($1, $2) (append.ts,  →   the same statement; $2 is the JSON our code   } a second
 *      at commit)                                           built for the sample (canonical segments,    } pipeline
 *                                                           payloadDigest) with this transaction's ids   }
 *                                                           substituted, so same size and shape; its     }
 *                                                           hashes chain but do not verify (the          }
 *                                                           payloadDigest and segments keep the          }
 *                                                           sample's ids), which costs PostgreSQL the same }
 *   6. store the response (idempotency.ts, at commit)   →   the same statement; the body is the sample's }
 *                                                           with this transaction's ids, its stand-ins   }
 *                                                           filled in by the database as ours are        }
 *   7. commit                                           →   COMMIT                                       }
 *
 * Fresh ids: pgbench has no uuid generator, so `\set r random(…)` draws a number per transaction and
 * ids are md5(<tag> || r)::uuid (random-looking v4-like values, like randomUUID(), so index inserts
 * land at random places as ours do); the substitutions into the two JSON values are replace() calls.
 * That is a few microseconds of server CPU per transaction that ours spends in Node instead.
 *
 * Workspace-specific values (workspace, key hash, key id, owner, Inbox ids) are per-script pgbench
 * variables (-D), not a lookup table: a lookup would add a statement or a subquery ours does not run.
 *
 * Protocol: `-M prepared`. Our app sends every statement as a named prepared statement cached per
 * connection (db/postgres.ts preparing()): parsed and planned once per connection, then Bind and
 * Execute; pgbench's prepared mode does the same. Connection settings are those of db/postgres.ts
 * (PGOPTIONS).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { openDatabase } from '@/db';
import { authenticateApiKey } from '@/server/auth/api-keys';
import { EMPTY_CONTEXT_MANIFEST_DIGEST, type Actor } from '@/server/domain/actor';
import { claimIdempotencyKey, storeSealedResponseAtCommit } from '@/server/domain/idempotency';
import { appendAtCommitOf } from '@/server/ledger/append';
import { createWork, type CreatedWork, type CreateWorkInput } from '@/server/domain/work/create-work';
import { inboxIds } from '@/server/domain/workspaces/ids';
import { parseEnv } from '@/server/env';
import { digestOf } from '@/server/ledger/canonical';
import { presentCreatedWork } from '@/server/api/routers/work/create';
import { percentile, WORK_BODY, type BenchDb, type BenchWorkspace, type LoadResult } from './lib';

export const PGBENCH = process.env.BENCH_PGBENCH ?? 'pgbench';
/** db/postgres.ts's startup settings, for pgbench's connections. */
export const PGOPTIONS =
  '-c lock_timeout=5000 -c statement_timeout=30000 -c TimeZone=UTC -c default_transaction_isolation=read\\ committed';
/** pgbench accepts at most 128 scripts (one per workspace here). */
const MAX_SCRIPTS = 128;

interface Statement {
  sql: string;
  params: unknown[];
}

/** A workspace's own values, in the order of `Sample.workspaceValues`. */
type WorkspaceValues = [workspaceId: string, keyHash: string, keyId: string, ownerId: string, ...inbox: string[]];

interface Sample {
  auth: Statement;
  claim: Statement;
  insert: Statement;
  append: Statement;
  store: Statement;
  /** The sample workspace's values; each target workspace's replace them. */
  workspaceValues: WorkspaceValues;
  /** Values that are new in every request: the sample's value and the pgbench SQL for a fresh one. */
  fresh: { value: string; expr: string; text: string }[];
}

const samples = new Map<string, Sample>();

/** One request through our real code path, recorded (it stays: one task in the sample workspace). */
async function captureSample(db: BenchDb, ws: BenchWorkspace): Promise<Sample> {
  const captured: Statement[] = [];
  const logger = { logQuery: (sql: string, params: unknown[]) => void captured.push({ sql, params: [...params] }) };
  const handle = await openDatabase({ url: db.url, poolMax: 1, logger });
  const d = handle.db;
  try {
    const principal = await authenticateApiKey(d, ws.apiKey, 10_000_000);
    if (!principal) throw new Error('bench/limit: the sample workspace key does not authenticate');
    const auth = captured.find((s) => s.sql.includes('rate_limit_counters'));
    const requestId = randomUUID();
    const idempotencyKey = `bench-pgbench-${randomUUID()}`;
    const actor: Actor = {
      type: 'api_key',
      id: principal.keyId,
      ownerId: principal.ownerUserId,
      workspaceId: principal.workspaceId,
      trace: { requestId, correlationId: requestId, idempotencyKey, contextManifestDigest: EMPTY_CONTEXT_MANIFEST_DIGEST },
    };
    // What the REST transport and runMutation (server/api/mutation.ts) hand to the services.
    const body = JSON.parse(WORK_BODY) as CreateWorkInput;
    const fingerprint = digestOf({ method: 'POST', path: '/api/v1/work', body });
    const ttl = parseEnv({}).IDEMPOTENCY_TTL_HOURS;
    const from = captured.length;
    let created: CreatedWork | undefined;
    // Committed (one task more in the sample workspace): the append and the store are sent only
    // when the transaction commits.
    await d.transaction(async (tx) => {
      await claimIdempotencyKey(tx, actor.workspaceId, idempotencyKey, fingerprint, ttl);
      created = await createWork(tx, actor, body);
      const sealing = appendAtCommitOf(tx);
      if (!sealing) throw new Error('bench/limit: createWork no longer appends at commit; update bench/limit.ts');
      const template = JSON.stringify(presentCreatedWork(actor.workspaceId, created));
      storeSealedResponseAtCommit(tx, actor.workspaceId, idempotencyKey, 201, template, sealing);
    });
    const [claim, insert, append, store, ...more] = captured.slice(from);
    const expect = (s: Statement | undefined, marker: string): Statement => {
      if (!s?.sql.includes(marker)) throw new Error(`bench/limit: our POST /work SQL changed (expected ${marker}); update bench/limit.ts`);
      if (/(?<!:):[A-Za-z0-9_]/.test(s.sql)) throw new Error(`bench/limit: a pgbench variable-like ":name" in ${marker}`);
      return s;
    };
    if (more.length > 0 || !created) throw new Error('bench/limit: our POST /work sends more statements than this script knows');
    const inbox = inboxIds(actor.workspaceId);
    return {
      auth: expect(auth, 'rate_limit_counters'),
      claim: expect(claim, 'insert into "idempotency_records"'),
      insert: expect(insert, '"inserted_task"'),
      append: expect(append, 'ledger_append('),
      store: expect(store, 'fill_stand_ins('),
      workspaceValues: [
        ws.workspaceId,
        ws.keyHash,
        principal.keyId,
        principal.ownerUserId,
        inbox.initiativeId,
        inbox.workstreamId,
        inbox.milestoneId,
      ],
      fresh: [
        { value: created.task.id, expr: `md5('t' || :r::text)::uuid`, text: `md5('t' || :r::text)::uuid::text` },
        { value: created.receipt.id, expr: `md5('c' || :r::text)::uuid`, text: `md5('c' || :r::text)::uuid::text` },
        { value: created.event.id, expr: `md5('e' || :r::text)::uuid`, text: `md5('e' || :r::text)::uuid::text` },
        { value: requestId, expr: `md5('q' || :r::text)::uuid`, text: `md5('q' || :r::text)::uuid::text` },
        // Same length as the sample key (and close to the load generator's keys).
        {
          value: idempotencyKey,
          expr: `'bench-pgbench-' || md5('k' || :r::text)::uuid`,
          text: `'bench-pgbench-' || md5('k' || :r::text)::uuid`,
        },
      ],
    };
  } finally {
    await handle.close();
  }
}

/** Each target workspace's own values (key id and owner from its key). */
async function workspaceValues(db: BenchDb, workspaces: BenchWorkspace[]): Promise<WorkspaceValues[]> {
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  try {
    const rows = await sql<{ secret_hash: string; id: string; owner_user_id: string }[]>`
      select secret_hash, id, owner_user_id from api_keys where secret_hash = any(${workspaces.map((w) => w.keyHash)})`;
    return workspaces.map((w) => {
      const key = rows.find((r) => r.secret_hash === w.keyHash);
      if (!key) throw new Error(`bench/limit: no API key for workspace ${w.workspaceId}`);
      const inbox = inboxIds(w.workspaceId);
      return [w.workspaceId, w.keyHash, key.id, key.owner_user_id, inbox.initiativeId, inbox.workstreamId, inbox.milestoneId];
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** One pgbench script per workspace, and the -D variables holding every parameter value. */
function buildScripts(sample: Sample, targets: WorkspaceValues[]): { scripts: string[]; defines: string[] } {
  const names = new Map<string, string>();
  const variable = (value: string) => {
    let name = names.get(value);
    if (!name) names.set(value, (name = `v${names.size}`));
    return `:${name}`;
  };
  const scripts = targets.map((values) => {
    const own = (s: string) => sample.workspaceValues.reduce((acc, v, i) => acc.split(v).join(values[i]!), s);
    const param = (value: unknown, cast?: string): string => {
      if (value === null) return 'NULL';
      const s = String(value);
      const fresh = sample.fresh.find((f) => f.value === s);
      if (fresh) return fresh.expr;
      const inside = sample.fresh.filter((f) => s.includes(f.value));
      if (inside.length === 0) return variable(own(s));
      // A JSON value built from this request's ids: the sample's, with this transaction's put in.
      // replace() yields text where ours sends an untyped parameter, so it is cast to jsonb (the
      // same jsonb_in call as ours) unless the statement casts it already.
      if (!/^[[{]/.test(s)) throw new Error('bench/limit: a request id inside a value that is not JSON');
      // A text parameter (the stored response's template) stays text.
      const replaced = inside.reduce((acc, f) => `replace(${acc}, ${variable(f.value)}, ${f.text})`, variable(own(s)));
      return cast === '::text' ? replaced : `${replaced}::jsonb`;
    };
    const render = (st: Statement) =>
      st.sql.replace(/\$(\d+)(::jsonb|::text)?/g, (_, n: string, cast?: string) => {
        const sql = param(st.params[Number(n) - 1], cast);
        return cast && sql.endsWith(cast) ? `(${sql})` : `(${sql})${cast ?? ''}`;
      });
    return [
      '-- Generated by bench/limit.ts from the statements our POST /api/v1/work sent for a sample request.',
      '\\set r random(1, 1000000000000000000)',
      '-- 1. server/auth/api-keys.ts authenticateApiKey: key lookup + rate-limit counter (no transaction)',
      `${render(sample.auth)};`,
      '-- 2. begin (db.transaction), 3. server/domain/idempotency.ts claimIdempotencyKey and',
      '-- 4. server/domain/work/create-work.ts task + receipt, in one flight (server/api/mutation.ts, db/postgres.ts)',
      '\\startpipeline',
      'BEGIN;',
      `${render(sample.claim)};`,
      `${render(sample.insert)};`,
      '\\endpipeline',
      '-- 5. server/ledger/append.ts appendEventsAtCommit, 6. server/domain/idempotency.ts',
      '-- storeSealedResponseAtCommit and 7. commit, in one flight (db/connection.ts atCommit)',
      '\\startpipeline',
      `${render(sample.append)};`,
      `${render(sample.store)};`,
      'COMMIT;',
      '\\endpipeline',
      '',
    ].join('\n');
  });
  return { scripts, defines: [...names].map(([value, name]) => `${name}=${value}`) };
}

export function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * pgbench at `clients` connections for `seconds`, each transaction our append on a workspace chosen
 * at random among `workspaces`. rps is pgbench's TPS without connection time; p50/p99 come from its
 * per-transaction log; failures are failed transactions plus aborted clients.
 */
export async function runLimit(db: BenchDb, workspaces: BenchWorkspace[], clients: number, seconds: number): Promise<LoadResult> {
  if (workspaces.length === 0 || workspaces.length > MAX_SCRIPTS) throw new Error(`bench/limit: 1 to ${MAX_SCRIPTS} workspaces`);
  let sample = samples.get(db.name);
  if (!sample) samples.set(db.name, (sample = await captureSample(db, db.workspaces[0]!)));
  const { scripts, defines } = buildScripts(sample, await workspaceValues(db, workspaces));

  const dir = await mkdtemp(path.join(tmpdir(), 'aws-bench-limit-'));
  try {
    const files = await Promise.all(
      scripts.map(async (text, i) => {
        const file = path.join(dir, `ws${i + 1}.sql`);
        await writeFile(file, text);
        return file;
      }),
    );
    const args = [
      ...['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(clients, 2)), '-T', String(seconds)],
      ...['-l', '--log-prefix', path.join(dir, 'txlog')],
      ...files.flatMap((f) => ['-f', f]),
      ...defines.flatMap((d) => ['-D', d]),
      db.url,
    ];
    const { code, stdout, stderr } = await run(PGBENCH, args, { ...process.env, PGOPTIONS });
    const tps = /^tps = ([\d.]+) \(without initial connection time\)/m.exec(stdout);
    if (!tps) throw new Error(`bench/limit: pgbench exited with ${code}:\n${stderr || stdout}`);
    const aborted = (stderr.match(/client \d+ aborted/g) ?? []).length;
    if (aborted > 0)
      console.error(`[bench/limit] ${aborted} pgbench client(s) aborted: ${stderr.split('\n').find((l) => l.includes('aborted'))}`);
    const failed = Number(/^number of failed transactions: (\d+)/m.exec(stdout)?.[1] ?? 0);

    // Per-transaction log: client_id transaction_no time(us) script_no time_epoch time_us [...]
    const latencies: number[] = [];
    for (const name of (await readdir(dir)).filter((n) => n.startsWith('txlog'))) {
      for (const line of (await readFile(path.join(dir, name), 'utf8')).split('\n')) {
        const us = Number(line.split(' ')[2]);
        if (line && Number.isFinite(us)) latencies.push(us / 1000);
      }
    }
    return { rps: Number(tps[1]), p50: percentile(latencies, 50), p99: percentile(latencies, 99), failures: failed + aborted };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
