/**
 * The claim queue: 32 agents draining 10,000 ready tasks through POST /tasks/claim, against
 * a bare `FOR UPDATE SKIP LOCKED` claim loop run by pgbench on the same tables (pick the first todo
 * task in queue order, mark it in progress, insert its run: one statement, no ledger), and against the
 * same loop with the claim's two ledger events appended (what the hash chain costs a claim with no HTTP
 * and no batching); and one agent's claim latency on a workspace of 1,000 ready tasks, then grown to
 * 100,000 (no ANALYZE: the plan must not depend on fresh statistics).
 *
 * Tasks are written straight into a workspace's Inbox with SQL (bench/tasks.ts grow), all `todo`,
 * priorities spread evenly, created a second apart. Each measure drains a workspace of its own.
 */
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGBENCH, PGOPTIONS, run } from './limit';
import postgres from 'postgres';
import { cpuTimeMs, machineCpuMs, percentile, postgresCpuMs, type BenchDb, type BenchWorkspace } from './lib';
import { grow } from './tasks';
import { httpGet } from './ledger';

/** Adds `count` todo tasks to the workspace's Inbox, numbered from `from` + 1. No ANALYZE. */
export const fillReady = (db: BenchDb, ws: BenchWorkspace, from: number, count: number) => grow(db, ws, from, from + count, true);

export interface DrainFigures {
  claims: number;
  seconds: number;
  perSecond: number;
  /**
   * CPU ms per claim: the whole machine; for ours also PostgreSQL's processes, the server and the
   * load generator (pgbench's backends have exited by the end of its loop: /proc no longer counts them).
   */
  cpu: { machine: number; postgres?: number; server?: number; loadGenerator?: number };
}

/** CPU counters at the start of a drain; `per(claims)` gives CPU ms per claim since. */
function cpuSince(serverPid?: number) {
  const machine = machineCpuMs().busy;
  const pg = postgresCpuMs();
  const server = serverPid === undefined ? 0 : cpuTimeMs(serverPid);
  const self = process.cpuUsage();
  return (claims: number): DrainFigures['cpu'] => {
    const load = process.cpuUsage(self);
    return {
      machine: (machineCpuMs().busy - machine) / claims,
      postgres: (postgresCpuMs() - pg) / claims,
      ...(serverPid === undefined
        ? {}
        : { server: (cpuTimeMs(serverPid) - server) / claims, loadGenerator: (load.user + load.system) / 1000 / claims }),
    };
  };
}

/**
 * Waits (up to a minute) until no autovacuum worker runs: a drain leaves 10,000 dead task versions
 * behind, and the next measure should not share the machine with their vacuum.
 */
export async function settle(db: BenchDb): Promise<void> {
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  try {
    for (let waited = 0; waited < 60_000; waited += 500) {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker'`;
      if (row!.n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await sql.end();
  }
}

/** The pick of the bare loop: the first todo task in queue order that no one holds, marked in progress. */
const PICK = `
with pick as (
  select id from tasks where workspace_id = :ws::uuid and status = 'todo'
   order by (case priority when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 else 3 end), created_at, id
   limit 1 for update skip locked
), claimed as (
  update tasks t set status = 'in_progress', version = t.version + 1, updated_at = now()
    from pick where t.id = pick.id returning t.id, t.workspace_id
)`;

/** The run the bare loop inserts (the same columns ours writes). */
const RUN_COLUMNS = `insert into runs (id, workspace_id, task_id, agent_id, status, fence, lease_seconds, lease_expires_at, version, created_at, updated_at)
select gen_random_uuid(), c.workspace_id, c.id, 'pgbench', 'running', 1, 300, now() + interval '300 seconds', 1, now(), now() from claimed c`;

/**
 * One event as ledger_append takes it, built in SQL: `aggregate` names the aggregate's id, `type`
 * the event type, `payload` a pgbench variable holding the payload's text. The canonical segments
 * and payloads are as long as a claim's (run.created about 700 characters, task.status_changed 250),
 * so the function hashes and stores as much; the bench never verifies this workspace's chain.
 */
const event = (aggregateType: string, aggregate: string, type: string, payload: string) =>
  `jsonb_build_object('id', gen_random_uuid(), 'ownerId', :ws::uuid, 'aggregateType', '${aggregateType}', 'aggregateId', ${aggregate},
    'eventType', '${type}', 'schemaVersion', 1, 'actorType', 'api_key', 'actorId', 'pgbench', 'payloadText', :${payload}::text,
    'payloadDigest', :digest::text, 'occurredAtCanonical', :occurred::text,
    'causationId', gen_random_uuid(), 'correlationId', gen_random_uuid(), 'contextManifestDigest', :digest::text,
    'canonical', jsonb_build_array(:s0::text, :s1::text, :s2::text, :s3::text, :s4::text))`;

const LOOPS = {
  /** Pick, mark in progress, insert the run: one statement, no ledger. */
  bare: `${PICK}\n${RUN_COLUMNS};\n`,
  /** The same, and the claim's two ledger events appended (ledger_append: the workspace's chain lock, hashes, inserts). */
  ledger: `${PICK}, run as (\n${RUN_COLUMNS} returning id, task_id\n)
select count(*) from run cross join lateral ledger_append(:ws::uuid, jsonb_build_array(
  ${event('run', 'run.id', 'run.created', 'runpayload')},
  ${event('task', 'run.task_id', 'task.status_changed', 'taskpayload')}));\n`,
};

/** Values of the ledger loop's variables: a payload, digest and segments of a claim's sizes. */
const LEDGER_VARIABLES = {
  runpayload: JSON.stringify({ agent_id: 'pgbench', claimed: true, filler: 'x'.repeat(620) }),
  taskpayload: JSON.stringify({ from: 'todo', to: 'in_progress', filler: 'x'.repeat(190) }),
  digest: `sha256:${'0'.repeat(64)}`,
  occurred: '2026-11-27T00:00:00.000Z',
  s0: '{"actorId":"pgbench","actorType":"api_key","aggregateId":"00000000-0000-0000-0000-000000000000","aggregateType":"run","aggregateVersion":',
  s1: ',"causationId":"00000000-0000-0000-0000-000000000000","contextManifestDigest":"sha256:0","correlationId":"0","payload":',
  s2: ',"payloadDigest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","previousHash":"',
  s3: '","schemaVersion":1,"sequence":',
  s4: ',"workspaceId":"00000000-0000-0000-0000-000000000000"}',
};

/**
 * A claim loop run by pgbench, `clients` connections, until `tasks` claims are made: `bare` the
 * bare SKIP LOCKED loop (the target's baseline), `ledger` the same with the claim's two ledger
 * events (what a claim costs PostgreSQL with the hash chain, with no HTTP and no batching).
 */
export async function pgbenchDrain(
  db: BenchDb,
  ws: BenchWorkspace,
  tasks: number,
  clients: number,
  loop: keyof typeof LOOPS = 'bare',
): Promise<DrainFigures> {
  const script = LOOPS[loop];
  const dir = await mkdtemp(path.join(tmpdir(), 'aws-bench-claims-'));
  try {
    const file = path.join(dir, 'claim.sql');
    await writeFile(file, script);
    const perClient = Math.floor(tasks / clients);
    const args = [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(clients),
      '-j',
      '2',
      '-t',
      String(perClient),
      '-f',
      file,
      '-D',
      `ws=${ws.workspaceId}`,
      ...(loop === 'ledger' ? Object.entries(LEDGER_VARIABLES).flatMap(([k, v]) => ['-D', `${k}=${v}`]) : []),
      db.url,
    ];
    const cpu = cpuSince();
    const { code, stdout, stderr } = await run(PGBENCH, args, { ...process.env, PGOPTIONS });
    const tps = /^tps = ([\d.]+) \(without initial connection time\)/m.exec(stdout);
    if (!tps) throw new Error(`bench/claims: pgbench exited with ${code}:\n${stderr || stdout}`);
    const claims = perClient * clients;
    // pgbench's rate without its connection time: what the loop itself sustains.
    return { claims, seconds: claims / Number(tps[1]), perSecond: Number(tps[1]), cpu: cpu(claims) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Answer {
  status: number;
  body: string;
}

function post(agent: http.Agent, url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

export interface OursDrain extends DrainFigures {
  /** Distinct tasks among the claims (equal to claims when no task was claimed twice). */
  distinct: number;
  /** Answers other than 201 and the final 204s, by status. */
  others: Record<number, number>;
}

/** `agents` agents, each claiming until it is told nothing is ready (204). */
export async function oursDrain(baseUrl: string, ws: BenchWorkspace, agents: number, serverPid?: number): Promise<OursDrain> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: agents });
  const headers = { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' };
  const url = `${baseUrl}/api/v1/tasks/claim`;
  const claimed: string[] = [];
  const others: Record<number, number> = {};
  try {
    const cpu = cpuSince(serverPid);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: agents }, async (_, i) => {
        const body = JSON.stringify({ agent_id: `bench-agent-${i}` });
        for (;;) {
          const answer = await post(agent, url, headers, body);
          if (answer.status === 204) return;
          if (answer.status !== 201) {
            others[answer.status] = (others[answer.status] ?? 0) + 1;
            if (answer.status >= 500 || answer.status === 409) continue;
            throw new Error(`POST /tasks/claim answered ${answer.status}: ${answer.body.slice(0, 300)}`);
          }
          claimed.push((JSON.parse(answer.body) as { data: { task: { id: string } } }).data.task.id);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    return {
      claims: claimed.length,
      seconds,
      perSecond: claimed.length / seconds,
      distinct: new Set(claimed).size,
      others,
      cpu: cpu(claimed.length),
    };
  } finally {
    agent.destroy();
  }
}

/**
 * The floor under a claim's server CPU: what our server spends on the cheapest authenticated API
 * request there is, GET /artifact-types answered 304 (the key's batched lookup and count, the
 * transport, tRPC; no statement of its own), `requests` of them by `agents` agents at once, as the
 * drain sends claims. Server and load generator CPU ms per request.
 */
export async function authenticatedFloor(
  baseUrl: string,
  ws: BenchWorkspace,
  agents: number,
  requests: number,
  serverPid: number,
): Promise<{ server: number; loadGenerator: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: agents });
  const url = `${baseUrl}/api/v1/artifact-types`;
  try {
    const first = await httpGet(agent, url, { authorization: `Bearer ${ws.apiKey}` });
    const etag = first.headers.etag;
    if (first.status !== 200 || typeof etag !== 'string') throw new Error(`GET /artifact-types answered ${first.status}`);
    const headers = { authorization: `Bearer ${ws.apiKey}`, 'if-none-match': etag };
    let left = requests;
    const server = cpuTimeMs(serverPid);
    const self = process.cpuUsage();
    await Promise.all(
      Array.from({ length: agents }, async () => {
        while (left-- > 0) {
          const answer = await httpGet(agent, url, headers);
          if (answer.status !== 304) throw new Error(`GET /artifact-types with its ETag answered ${answer.status}`);
        }
      }),
    );
    const load = process.cpuUsage(self);
    return { server: (cpuTimeMs(serverPid) - server) / requests, loadGenerator: (load.user + load.system) / 1000 / requests };
  } finally {
    agent.destroy();
  }
}

/** One agent's claims, one after another: p50 and p99 of `samples` claims (the workspace must hold that many ready tasks). */
export async function claimLatency(baseUrl: string, ws: BenchWorkspace, samples: number): Promise<{ p50: number; p99: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' };
  const url = `${baseUrl}/api/v1/tasks/claim`;
  const body = JSON.stringify({ agent_id: 'bench-latency' });
  try {
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      const answer = await post(agent, url, headers, body);
      times.push(performance.now() - t0);
      if (answer.status !== 201) throw new Error(`POST /tasks/claim answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    }
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    agent.destroy();
  }
}
