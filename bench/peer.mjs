// The benchmark's "peer": the leanest server doing exactly what our POST /api/v1/work sends to
// PostgreSQL: the same statements, text and parameters (as our client sends them: named prepared
// statements cached per connection, db/postgres.ts preparing(); values as strings/numbers), in the
// same transaction, with ledger events our chain verifier accepts. No framework, no validation
// library, no app code: node:http + postgres.js (or node-postgres, PEER_DRIVER=pg).
//
// Env: DATABASE_URL, PORT, DB_POOL_MAX (default 10), PEER_DRIVER (postgres | pg). GET /health, POST /api/v1/work.
import http from 'node:http';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import postgres from 'postgres';
import pg from 'pg';

// The driver: postgres.js as the service uses it (default), or node-postgres with its pipeline
// mode (PEER_DRIVER=pg), so the two drivers are measured on the same SQL in the same server
// (npm run bench -- --only drivers; PEER_PIPELINE=false turns pg's pipelining off). Each gives `query(text, params)` (a named prepared statement,
// sent at once) on the pool and on a reserved connection, `command(text)` for BEGIN/COMMIT, and
// `end()`.
const DRIVER = process.env.PEER_DRIVER ?? 'postgres';
const POOL_MAX = Number(process.env.DB_POOL_MAX ?? 10);
const db = DRIVER === 'pg' ? nodePostgres() : postgresJs();

function postgresJs() {
  // The client of db/postgres.ts: same pool size default, startup settings and int8 parsing.
  const sql = postgres(process.env.DATABASE_URL, {
    max: POOL_MAX,
    connection: { lock_timeout: 5000, statement_timeout: 30000, TimeZone: 'UTC', default_transaction_isolation: 'read committed' },
    onnotice: () => undefined,
    types: { int8: { to: 20, from: [20], serialize: (v) => String(v), parse: (v) => Number(v) } },
  });
  // What drizzle-orm/postgres-js does to that client: date/time and JSON values pass through as text.
  const asIs = (v) => v;
  for (const t of ['1184', '1082', '1083', '1114', '1182', '1185', '1115', '1231'])
    sql.options.parsers[t] = sql.options.serializers[t] = asIs;
  sql.options.serializers['114'] = sql.options.serializers['3802'] = asIs;
  const on = (c) => ({
    // execute(): sent now, not when first awaited (postgres.js queries are lazy).
    query: (text, params) => c.unsafe(text, params, { prepare: true }).execute(),
    command: async (text) => (await c.unsafe(text).execute()).command,
  });
  return {
    ...on(sql),
    async reserve() {
      const c = await sql.reserve();
      return { ...on(c), release: () => c.release() };
    },
    end: () => sql.end({ timeout: 2 }),
  };
}

function nodePostgres() {
  // Same startup settings; int8 as numbers; date/time and JSON values as text, as above.
  for (const t of [1184, 1082, 1083, 1114, 1182, 1185, 1115, 1231, 114, 3802]) pg.types.setTypeParser(t, (v) => v);
  pg.types.setTypeParser(20, Number);
  const pool = new pg.Pool({
    connectionString: process.env.DATABASE_URL,
    max: POOL_MAX,
    pipeline: process.env.PEER_PIPELINE !== 'false',
    options: '-c lock_timeout=5000 -c statement_timeout=30000 -c TimeZone=UTC -c default_transaction_isolation=read\\ committed',
  });
  // Named statements are prepared once per connection, as postgres.js's prepare: true does.
  const names = new Map();
  const named = (text) => names.get(text) ?? names.set(text, `peer_${names.size}`).get(text);
  const on = (c) => ({
    query: async (text, params) => (await c.query({ name: named(text), text, values: params })).rows,
    command: async (text) => (await c.query(text)).command,
  });
  return {
    ...on(pool),
    async reserve() {
      const c = await pool.connect();
      return { ...on(c), release: () => c.release() };
    },
    end: () => pool.end(),
  };
}

// 1. server/auth/api-keys.ts authenticateApiKey (with server/rate-limits.ts countHit), outside the transaction.
const AUTH = `with key as (
          select id, workspace_id, owner_user_id from api_keys
          where secret_hash = $1 and revoked_at is null limit 1
        ), counted as (insert into rate_limit_counters (bucket, window_start, hits)
    select b.bucket, $2::timestamptz, 1 from (select 'api_key:' || id::text from key) as b(bucket)
    on conflict (bucket, window_start) do update set hits = rate_limit_counters.hits + 1
    returning hits)
        select key.id, key.workspace_id, key.owner_user_id, counted.hits from key, counted`;
// 3. server/domain/idempotency.ts claimIdempotencyKey (fails with SQLSTATE AW409 when the key is
// taken), then (replays only, after ROLLBACK) storedResponse's read of the stored response.
const CLAIM = `with "claimed" as (insert into "idempotency_records" ("workspace_id", "key", "fingerprint", "response_status", "response_body", "created_at", "expires_at") values ($1, $2, $3, default, default, default, now() + make_interval(hours => $4)) on conflict ("workspace_id","key") do update set "fingerprint" = $5, "response_status" = $6, "response_body" = $7, "created_at" = now(), "expires_at" = now() + make_interval(hours => $8) where "idempotency_records"."expires_at" < now() returning "key") select case when count(*) > 0 then true else idempotency_key_taken() end from "claimed"`;
const STORED = `select "fingerprint", "response_status", "response_body" from "idempotency_records" where ("idempotency_records"."workspace_id" = $1 and "idempotency_records"."key" = $2)`;
// 4. server/domain/work/create-work.ts: task and receipt in one statement.
const INSERT_WORK = `with "inserted_task" as (insert into "tasks" ("id", "workspace_id", "version", "created_at", "updated_at", "position", "initiative_id", "workstream_id", "milestone_id", "title", "description", "priority", "type", "estimate_hours", "status", "pause_id", "resume_status", "agent_id", "depends_on") values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) returning "id") insert into "receipts" ("id", "workspace_id", "task_id", "status", "summary", "created_at", "updated_at") values ($20, $21, $22, $23, $24, $25, $26)`;
// 5. server/ledger/append.ts appendEvents.
const APPEND = `select * from ledger_append($1::uuid, $2::jsonb)`;
// 6. server/domain/idempotency.ts storeSealedResponseAtCommit: the response written with stand-ins
// for what the append assigns, filled in by the database (drizzle/0017 fill_stand_ins).
const STORE = `update idempotency_records set response_status = $1, response_body = fill_stand_ins(
      $2::text,
      array(select s from jsonb_array_elements_text($3::jsonb) with ordinality as t(s, i) order by i),
      array(select v.value
              from jsonb_array_elements_text($4::jsonb) with ordinality as e(id, ord)
              cross join lateral (select l.aggregate_version, l.previous_hash, l.sequence, l.event_hash
                                    from ledger_events l where l.id = e.id::uuid offset 0) as l
              cross join lateral unnest(array[l.aggregate_version::text, l.previous_hash, l.sequence::text, l.event_hash])
                with ordinality as v(value, i)
             order by e.ord, v.i))::jsonb
    where workspace_id = $5 and key = $6`;

const TTL_HOURS = 24; // IDEMPOTENCY_TTL_HOURS's default
const BODY_LIMIT = 1024 * 1024;
const KEY_PATTERN = /^awk_[A-Za-z0-9_-]{43}$/;
const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;
const PRIORITIES = new Set(['low', 'medium', 'high', 'urgent']);

const sha256Hex = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
const digestOf = (value) => `sha256:${sha256Hex(canonicalize(value))}`;
const EMPTY_CONTEXT_MANIFEST_DIGEST = digestOf({});

// server/ledger/canonical.ts eventCanonicalSegments: the JCS form of the event cut around the three
// values only ledger_append knows (aggregateVersion, previousHash with its quotes kept, sequence)
// and the payload, which goes as its own canonical text (payloadText).
const CUTS = ['aggregateVersion', 'payload', 'previousHash', 'sequence'];
function canonicalSegments(event) {
  const segments = [];
  let current = '{';
  const { payload, ...fields } = event;
  [...Object.keys(fields), ...CUTS].sort().forEach((key, i) => {
    current += `${i > 0 ? ',' : ''}${JSON.stringify(key)}:`;
    if (!CUTS.includes(key)) current += canonicalize(fields[key]);
    else {
      const quote = key === 'previousHash' ? '"' : '';
      segments.push(current + quote);
      current = quote;
    }
  });
  segments.push(current + '}');
  return { segments, payloadText: canonicalize(payload) };
}

// server/domain/workspaces/ids.ts inboxIds: UUIDv5 names under the workspace id (cached per workspace).
function uuidv5(name, namespace) {
  const h = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.toString('hex', 0, 16);
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
const inboxes = new Map();
function inboxOf(ws) {
  let ids = inboxes.get(ws);
  if (!ids) inboxes.set(ws, (ids = ['initiative', 'workstream', 'milestone'].map((k) => uuidv5(`inbox/${k}`, ws))));
  return ids;
}

const problem = (status, code, message) => [status, JSON.stringify({ error: { code, message } })];

async function createWork(headers, text) {
  let input;
  try {
    input = JSON.parse(text);
  } catch {
    return problem(400, 'invalid_json', 'The body is not JSON.');
  }
  const { title, description = null, priority = 'medium' } = input ?? {};
  const valid = typeof title === 'string' && title.length >= 1 && title.length <= 240 && PRIORITIES.has(priority);
  if (!valid || (description !== null && typeof description !== 'string')) return problem(400, 'validation_failed', 'Bad title.');
  const token = /^Bearer[ ]+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  if (!token || !KEY_PATTERN.test(token)) return problem(401, 'unauthorized', 'Send Authorization: Bearer <API key>.');
  const idemKey = headers['idempotency-key'] ?? null;
  if (idemKey !== null && !IDEMPOTENCY_KEY_PATTERN.test(idemKey)) return problem(400, 'invalid_idempotency_key', 'Bad Idempotency-Key.');

  const now = new Date();
  const windowStart = new Date(Math.floor(now.getTime() / 60_000) * 60_000).toISOString();
  const [key] = await db.query(AUTH, [sha256Hex(token), windowStart]);
  if (!key) return problem(401, 'unauthorized', 'The API key is unknown or revoked.');
  const ws = key.workspace_id;
  const fingerprint = digestOf({ method: 'POST', path: '/api/v1/work', body: input });

  const at = now.toISOString();
  const [initiativeId, workstreamId, milestoneId] = inboxOf(ws);
  // Same fields in the same order as create-work.ts, so the payload and its digest are alike.
  const task = {
    ...{ id: randomUUID(), initiative_id: initiativeId, workstream_id: workstreamId, milestone_id: milestoneId, position: 0, title },
    ...{ description, status: 'todo', priority, type: 'build', estimate_hours: null, agent_id: null, depends_on: [] },
    ...{ created_at: at, updated_at: at },
  };
  const receipt = { id: randomUUID(), task_id: task.id, status: 'completed', summary: title, created_at: at };
  const requestId = randomUUID();
  const payload = { task, receipt };
  // The event as server/ledger/append.ts builds it (same keys in the same order).
  const event = {
    ...{ id: randomUUID(), workspaceId: ws, ownerId: key.owner_user_id, aggregateType: 'task', aggregateId: task.id },
    ...{ eventType: 'work.created', schemaVersion: 1, actorType: 'api_key', actorId: key.id, payload, payloadDigest: digestOf(payload) },
    ...{ occurredAtCanonical: at, idempotencyKey: idemKey, causationId: requestId, correlationId: requestId },
    contextManifestDigest: EMPTY_CONTEXT_MANIFEST_DIGEST,
  };
  const { segments, payloadText } = canonicalSegments(event);
  const appendInput = JSON.stringify([{ ...event, payload: undefined, canonical: segments, payloadText }]);

  // server/ledger/stand-ins.ts: stand-ins for aggregateVersion, previousHash, sequence, eventHash.
  const bytes = randomBytes(76);
  const int = (at) => 1e15 + Math.floor((bytes.readUIntBE(at, 6) / 2 ** 48) * 8e15);
  const standIns = [int(0), `sha256:${bytes.toString('hex', 12, 44)}`, int(6), `sha256:${bytes.toString('hex', 44, 76)}`];
  // The body of presentCreatedWork (server/api/routers/work/create.ts), with the stand-ins: also what is stored.
  const template = JSON.stringify({
    data: {
      ...{ taskId: task.id, receiptId: receipt.id, eventId: event.id, aggregateVersion: standIns[0] },
      ...{ eventHash: standIns[3], duplicate: false, task, receipt },
    },
    meta: { apiVersion: '1', workspaceId: ws, duplicate: false },
  });
  try {
    return await transaction(async (tx) => {
      // As server/api/mutation.ts: claim and insert in one flight with BEGIN; then the append and
      // the store go with COMMIT (appendEventsAtCommit), so the append's lock is held for no round
      // trip (transaction() below sends COMMIT without waiting for them).
      await Promise.all([
        idemKey === null ? null : tx.query(CLAIM, [ws, idemKey, fingerprint, TTL_HOURS, fingerprint, null, null, TTL_HOURS]),
        tx.query(INSERT_WORK, [
          ...[task.id, ws, 1, at, at, 0, initiativeId, workstreamId, milestoneId, title, description, priority, 'build', null, 'todo'],
          ...[null, null, null, '{}', receipt.id, ws, task.id, 'completed', title, at, at],
        ]),
      ]);
      return {
        atCommit: () => [
          tx.query(APPEND, [ws, appendInput]),
          idemKey === null
            ? null
            : tx.query(STORE, [201, template, JSON.stringify(standIns.map(String)), JSON.stringify([event.id]), ws, idemKey]),
        ],
        // The response: the template with the append's values (server/ledger/stand-ins.ts fillText).
        result: ([[sealed]]) => {
          const values = [sealed.r_aggregate_version, sealed.r_previous_hash, sealed.r_sequence, sealed.r_event_hash];
          let body = template;
          standIns.forEach((standIn, i) => (body = body.replaceAll(String(standIn), String(values[i]))));
          return [201, body];
        },
      };
    });
  } catch (err) {
    if (err?.code !== 'AW409') throw err;
    const [stored] = await db.query(STORED, [ws, idemKey]);
    if (!stored || stored.response_status === null) return problem(409, 'idempotency_in_progress', 'Retry later.');
    if (stored.fingerprint !== fingerprint) return problem(422, 'idempotency_conflict', 'Key used with another request.');
    const { data, meta } = stored.response_body;
    return [200, JSON.stringify({ data: { ...data, duplicate: true }, meta: { ...meta, duplicate: true } })];
  }
}

// As db/postgres.ts beginPipelined: BEGIN goes out with the first statement; the statements left
// for COMMIT (`atCommit`) go out with it, without waiting for their answers.
async function transaction(fn) {
  const tx = await db.reserve();
  try {
    const begun = tx.command('begin');
    begun.catch(() => undefined);
    let out;
    let left;
    try {
      out = await fn(tx);
      await begun;
      left = out.atCommit().filter(Boolean);
      for (const statement of left) statement.catch(() => undefined);
    } catch (err) {
      await tx.command('rollback').catch(() => undefined);
      throw err;
    }
    const committed = tx.command('commit');
    committed.catch(() => undefined);
    const answers = [];
    for (const statement of left) answers.push(await statement);
    if ((await committed) !== 'COMMIT') throw new Error('rolled back');
    return out.result(answers);
  } finally {
    tx.release();
  }
}

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') return send(res, 200, '{"ok":true}');
  if (req.method !== 'POST' || req.url !== '/api/v1/work') return send(res, ...problem(404, 'not_found', 'No such route.'));
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size <= BODY_LIMIT) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > BODY_LIMIT) return send(res, ...problem(413, 'input.too_large', 'Body too large.'));
    createWork(req.headers, Buffer.concat(chunks).toString('utf8')).then(
      ([status, body]) => send(res, status, body),
      (err) => {
        console.error('peer: request failed', err);
        send(res, ...problem(500, 'internal_error', 'Unexpected error.'));
      },
    );
  });
});
server.listen(Number(process.env.PORT ?? 3100), '127.0.0.1');

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    db.end().then(() => process.exit(0));
  });
}
