/**
 * The retention job (server/retention.ts) on both engines: what is kept only for a while goes
 * once its time is over, and nothing else; in batches; on one instance at a time; ended dedup
 * claims leave with a ledger event, so the projection still follows from the ledger and a
 * fingerprint claimed again after it goes on with the same aggregate.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { takeLease } from '@/server/job-lease';
import { startBackgroundJobs } from '@/server/jobs';
import { replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { runRetention, type RetentionSettings } from '@/server/retention';
import { metricSample } from '../support/metrics';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';

let app: TestApp;
let settings: RetentionSettings;

beforeAll(async () => {
  app = await startTestApp({ DELIVERY_LOG_DAYS: '7', RATE_LIMIT_API_PER_MIN: '100000', WEBHOOKS_ALLOW_PRIVATE: 'true' });
  settings = { deliveryLogDays: 7, attemptLimits: attemptLimitsOf(app.runtime) };
});
afterAll(async () => {
  await app?.close();
});

const count = async (text: string) => Number((await query<{ n: number | string }>(app.runtime.db, sql.raw(text)))[0]!.n);
const MINUTE = 60_000;

/** POST /work with an Idempotency-Key each; the keys. */
async function keyedWrites(ws: TestWorkspace, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const key = `retention-${randomUUID()}`;
    const res = await app.request('POST', '/work', { key: ws.apiKey, headers: { 'Idempotency-Key': key }, body: { title: `Kept ${i}` } });
    expect(res.status, res.text).toBe(201);
    keys.push(key);
  }
  return keys;
}

/** Moves these records' expiry into the past, as if their TTL had run out. */
async function expire(ws: TestWorkspace, keys: string[]): Promise<void> {
  await app.runtime.db.execute(
    sql`update idempotency_records set expires_at = now() - interval '1 minute'
         where workspace_id = ${ws.workspaceId} and key in (${sql.join(
           keys.map((k) => sql`${k}`),
           sql`, `,
         )})`,
  );
}

async function claim(ws: TestWorkspace, body: Record<string, unknown>) {
  const res = await app.request('POST', '/live/dedup/claim', { key: ws.apiKey, body });
  expect(res.status, res.text).toBe(200);
  return res.body as { claimed: boolean; active_run_id: string };
}

describe('what is past its time goes, and nothing else', () => {
  it('deletes expired idempotency records, ended claims, ended windows and old deliveries, in batches', async () => {
    const ws = await app.createWorkspace();
    // 25 records that expired and 3 that did not.
    const expired = await keyedWrites(ws, 25);
    const kept = await keyedWrites(ws, 3);
    await expire(ws, expired);

    // Claims: one released, one expired (60 s), one held for an hour.
    const released = { source: 'retention', event_key: 'released' };
    const first = await claim(ws, { ...released, ttl_seconds: 600 });
    const rel = await app.request('POST', '/live/dedup/release', { key: ws.apiKey, body: { ...released, run_id: first.active_run_id } });
    expect(rel.body.released).toBe(true);
    await claim(ws, { source: 'retention', event_key: 'expired', ttl_seconds: 60 });
    const held = await claim(ws, { source: 'retention', event_key: 'held', ttl_seconds: 3600 });

    // Rate-limit windows and attempt counters whose windows ended long ago, beside today's.
    await app.runtime.db.execute(
      sql`insert into rate_limit_counters (bucket, window_start, hits) values
            ('api_key:retention-old', now() - interval '1 hour', 3), ('api_key:retention-new', now() + interval '10 minutes', 1)`,
    );
    await app.runtime.db.execute(
      sql`insert into attempt_counters (bucket, window_start, attempts) values
            ('sign_in:account:old@retention', now() - interval '1 day', 2), ('sign_in:account:new@retention', now() + interval '10 minutes', 1)`,
    );

    // Delivery attempts: one 8 days old (past DELIVERY_LOG_DAYS=7), one 6 days old.
    const hook = await app.request('POST', '/webhooks', { key: ws.apiKey, body: { url: 'http://127.0.0.1:9/hook' } });
    expect(hook.status, hook.text).toBe(201);
    const [event] = await query<{ id: string; sequence: number | string }>(
      app.runtime.db,
      sql`select id, sequence from ledger_events where workspace_id = ${ws.workspaceId} order by sequence limit 1`,
    );
    for (const days of [8, 6]) {
      await app.runtime.db.execute(
        sql`insert into webhook_deliveries (id, endpoint_id, workspace_id, event_id, sequence, event_type, attempt, succeeded, duration_ms, created_at)
            values (${randomUUID()}, ${hook.body.data.id}, ${ws.workspaceId}, ${event!.id}, ${Number(event!.sequence)}, 'work.created', 1, true, 5,
                    now() - make_interval(days => ${days}))`,
      );
    }

    // WebAuthn challenges: one nobody answered in time, one still open.
    await app.runtime.db.execute(
      sql`insert into webauthn_challenges (id, purpose, challenge, expires_at) values
            (${randomUUID()}, 'sign_in', 'old', now() - interval '1 hour'), (${randomUUID()}, 'sign_in', 'open', now() + interval '1 hour')`,
    );

    // Five minutes on: the expired claim ended four minutes before, past the minute of grace.
    const report = await runRetention(app.runtime.db, settings, { now: new Date(Date.now() + 5 * MINUTE), batchSize: 10 });
    // (Five minutes on, this test's own rate-limit windows have ended too.)
    expect(report).toMatchObject({
      idempotency_records: 25,
      dedup_claims: 2,
      attempt_counters: 1,
      webhook_deliveries: 1,
      webauthn_challenges: 1,
    });
    const open = await query<{ challenge: string }>(app.runtime.db, sql`select challenge from webauthn_challenges`);
    expect(open.map((c) => c.challenge)).toEqual(['open']);
    expect(report!.rate_limit_counters).toBeGreaterThanOrEqual(1);
    // Batches of 10, each table's last one short: 10 + 10 + 5 idempotency records, and so on.
    const { batches, ...tables } = report!;
    expect(batches).toBe(Object.values(tables).reduce((sum, rows) => sum + Math.floor(rows / 10) + 1, 0));

    const left = await query<{ key: string }>(
      app.runtime.db,
      sql`select key from idempotency_records where workspace_id = ${ws.workspaceId}`,
    );
    expect(left.map((r) => r.key).sort()).toEqual([...kept].sort());
    const claims = await query<{ event_key: string }>(
      app.runtime.db,
      sql`select event_key from dedup_claims where workspace_id = ${ws.workspaceId}`,
    );
    expect(claims.map((c) => c.event_key)).toEqual(['held']);
    expect(await count(`select count(*) as n from rate_limit_counters where bucket like 'api_key:retention-%'`)).toBe(1);
    expect(await count(`select count(*) as n from attempt_counters where bucket like '%@retention'`)).toBe(1);
    const deliveries = await app.request('GET', `/webhooks/${hook.body.data.id}/deliveries`, { key: ws.apiKey });
    expect(deliveries.body.data).toHaveLength(1);

    // The claims went with ledger events, by the system: the chain verifies and the tables still
    // follow from the ledger.
    const pruned = await app.request('GET', '/events/stream?type=dedup.pruned', { key: ws.apiKey });
    expect(pruned.status, pruned.text).toBe(200);
    expect(pruned.body.data.map((e: { payload: { claim: { event_key: string } } }) => e.payload.claim.event_key).sort()).toEqual([
      'expired',
      'released',
    ]);
    expect(pruned.body.data[0]).toMatchObject({ actorType: 'system', actorId: 'system:retention' });
    expect((await app.request('GET', '/ledger/verify', { key: ws.apiKey })).body.data).toMatchObject({ ok: true, firstBreak: null });
    expect((await replayWorkspace(app.runtime.db, ws.workspaceId)).state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));

    // The held claim still dedupes; a pruned fingerprint is claimed anew and its aggregate goes on
    // (version 3 after claimed, released and pruned), as the replayed projection has it.
    const again = await claim(ws, { source: 'retention', event_key: 'held', ttl_seconds: 600 });
    expect(again).toMatchObject({ claimed: false, active_run_id: held.active_run_id });
    expect((await claim(ws, { ...released, ttl_seconds: 600 })).claimed).toBe(true);
    const [row] = await query<{ version: number }>(
      app.runtime.db,
      sql`select version from dedup_claims where workspace_id = ${ws.workspaceId} and event_key = 'released'`,
    );
    expect(row!.version).toBe(4);
    expect((await replayWorkspace(app.runtime.db, ws.workspaceId)).state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));

    // Nothing more to do.
    const second = await runRetention(app.runtime.db, settings, { now: new Date(Date.now() + 5 * MINUTE), batchSize: 10 });
    expect(second).toMatchObject({ idempotency_records: 0, dedup_claims: 0, webhook_deliveries: 0 });
  });

  it('frees an expired key for a new request: the write after retention is new, not a replay', async () => {
    const ws = await app.createWorkspace();
    const [key] = await keyedWrites(ws, 1);
    await expire(ws, [key!]);
    await runRetention(app.runtime.db, settings);
    const res = await app.request('POST', '/work', { key: ws.apiKey, headers: { 'Idempotency-Key': key! }, body: { title: 'Another' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(res.body.data.task.title).toBe('Another');
  });
});

describe('one instance at a time', () => {
  it('does nothing while another holder has the lease, and runs once it has ended', async () => {
    const ws = await app.createWorkspace();
    await expire(ws, await keyedWrites(ws, 2));
    expect(await takeLease(app.runtime.db, 'retention', 60_000, 'another-instance')).toBe(true);
    expect(await runRetention(app.runtime.db, settings)).toBeNull();
    expect(await count(`select count(*) as n from idempotency_records where workspace_id = '${ws.workspaceId}'`)).toBe(2);

    // That instance died: its lease runs out.
    await app.runtime.db.execute(sql`update job_leases set until = now() - interval '1 second' where name = 'retention'`);
    expect(await runRetention(app.runtime.db, settings)).toMatchObject({ idempotency_records: 2 });
    // Given back when done: the next run, from anyone, need not wait.
    expect(await takeLease(app.runtime.db, 'retention', 60_000, 'another-instance')).toBe(true);
    await app.runtime.db.execute(sql`update job_leases set until = now() where name = 'retention'`);
  });

  it('of two runs at once, one holds the lease', async () => {
    const runs = await Promise.all(['instance-a', 'instance-b'].map((holder) => runRetention(app.runtime.db, settings, { holder })));
    // The first may finish and give the lease back before the second asks: then both ran, one
    // after the other; never both at once.
    const ran = runs.filter((r) => r !== null).length;
    expect(ran).toBeGreaterThanOrEqual(1);
    const leases = await query<{ holder: string }>(app.runtime.db, sql`select holder from job_leases where name = 'retention'`);
    expect(leases).toHaveLength(1);
  });
});

it('runs as a background job: counted in the metrics, its success recorded', async () => {
  const ws = await app.createWorkspace();
  await expire(ws, await keyedWrites(ws, 3));
  const before = (await metricSample('aws_retention_deleted_total', { table: 'idempotency_records' })) ?? 0;
  const stop = startBackgroundJobs(app.runtime, { sweepMs: 60_000, retentionMs: 50 });
  try {
    await expect
      .poll(() => count(`select count(*) as n from idempotency_records where workspace_id = '${ws.workspaceId}'`), { timeout: 5_000 })
      .toBe(0);
    await expect
      .poll(async () => (await metricSample('aws_retention_deleted_total', { table: 'idempotency_records' })) ?? 0)
      .toBeGreaterThanOrEqual(before + 3);
    await expect
      .poll(async () => (await metricSample('aws_job_last_success_timestamp_seconds', { job: 'retention' })) ?? 0)
      .toBeGreaterThan(0);
  } finally {
    await stop();
  }
});
