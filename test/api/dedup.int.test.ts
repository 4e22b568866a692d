/** Duplicate-trigger claims: first claimant wins, expiry, release, concurrency, and failing closed. */
import { createHash, randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { query } from '@/db';
import { dedupClaims, ledgerEvents } from '@/db/schema';
import { loadFromTables } from '@/server/projections/state';
import { replayWorkspace } from '@/server/projections/rebuild';
import { startTestApp, type TestApp } from '../support/app';
import { startDbProxy } from '../support/db-proxy';
import { testEngine } from '../support/engine';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

const claim = (body: Record<string, unknown>, a: TestApp = app) => a.request('POST', '/live/dedup/claim', { body });
const release = (body: Record<string, unknown>, a: TestApp = app) => a.request('POST', '/live/dedup/release', { body });
const fresh = () => ({ source: 'github-webhook', event_key: `delivery-${randomUUID()}` });

/** A run of the app's workspace (a claim's run_id must be one, or a holder id a claim generated). */
async function aRun(): Promise<string> {
  const work = await app.request('POST', '/work', { body: { title: 'a task to run' } });
  const run = await app.request('POST', '/runs', { body: { task_id: work.body.data.taskId } });
  expect(run.status, run.text).toBe(201);
  return run.body.data.runId as string;
}

describe('POST /live/dedup/claim', () => {
  it('the first claimant holds the fingerprint; another run is deduped; both 200', async () => {
    const signal = fresh();
    const runA = await aRun();
    const before = await app.counts();
    const first = await claim({ ...signal, run_id: runA, ttl_seconds: 600 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true, claimed: true, deduped: false, active_run_id: runA, data: { auth_mode: 'api_key' } });
    const expires = Date.parse(first.body.expires_at);
    expect(expires - Date.now()).toBeGreaterThan(590_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(600_000);
    const after = await app.counts();
    expect(after.claims! - before.claims!).toBe(1);
    expect(after.events! - before.events!).toBe(1);

    await app.expectUnchanged(async () => {
      const second = await claim({ ...signal });
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({
        ok: true,
        claimed: false,
        deduped: true,
        active_run_id: runA,
        expires_at: first.body.expires_at,
      });
    });
  });

  it('fingerprint_hash is hex sha256 of the canonical {event_key, initiative_id, source}', async () => {
    const initiative = (await app.request('POST', '/initiatives', { body: { title: 'nightly jobs' } })).body.data.initiative.id as string;
    const res = await claim({ source: 'cron', event_key: 'nightly/2026-11-23', initiative_id: initiative });
    const canonical = `{"event_key":"nightly/2026-11-23","initiative_id":"${initiative}","source":"cron"}`;
    expect(res.body.fingerprint_hash).toBe(createHash('sha256').update(canonical).digest('hex'));
    const unscoped = await claim({ source: 'cron', event_key: 'nightly/2026-11-23' });
    expect(unscoped.body.fingerprint_hash).toBe(
      createHash('sha256').update('{"event_key":"nightly/2026-11-23","initiative_id":null,"source":"cron"}').digest('hex'),
    );
    // Another scope is another fingerprint: both are claimed.
    expect(unscoped.body.claimed).toBe(true);
  });

  it('an initiative_id or run_id that is not this workspace’s (another’s, or none at all) is 404 and writes nothing', async () => {
    const other = await app.createWorkspace();
    const theirWork = await app.request('POST', '/work', { key: other.apiKey, body: { title: 'theirs' } });
    const theirRun = (await app.request('POST', '/runs', { key: other.apiKey, body: { task_id: theirWork.body.data.taskId } })).body.data
      .runId as string;
    const theirInitiative = (await app.request('POST', '/initiatives', { key: other.apiKey, body: { title: 'theirs' } })).body.data
      .initiative.id as string;
    const held = await claim(fresh());
    await app.expectUnchanged(async () => {
      for (const ids of [
        { initiative_id: theirInitiative },
        { initiative_id: randomUUID() },
        { run_id: theirRun },
        { run_id: randomUUID() },
      ]) {
        for (const send of [claim, release]) {
          const res = await send({ ...fresh(), ...(send === release ? { run_id: held.body.active_run_id } : {}), ...ids });
          expect(res.status, `${send === claim ? 'claim' : 'release'} ${JSON.stringify(ids)}`).toBe(404);
          expect(res.body.error.code).toBe('not_found');
        }
      }
    });
    // Ours are taken: a run of this workspace, and a holder id a claim of it generated.
    expect((await claim({ ...fresh(), run_id: await aRun() })).status).toBe(200);
    expect((await claim({ ...fresh(), run_id: held.body.active_run_id })).body.claimed).toBe(true);
  });

  it('generates a run id when none is sent, and defaults to six hours', async () => {
    const res = await claim(fresh());
    expect(res.body.active_run_id).toMatch(/^[0-9a-f-]{36}$/);
    const ttl = Date.parse(res.body.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(6 * 3600_000 - 10_000);
    expect(ttl).toBeLessThanOrEqual(6 * 3600_000);
  });

  it('the holder re-claiming extends its claim (dedup.extended); a shorter ttl never shortens it and writes nothing', async () => {
    const signal = fresh();
    const run = await aRun();
    const first = await claim({ ...signal, run_id: run, ttl_seconds: 60 });
    const again = await claim({ ...signal, run_id: run, ttl_seconds: 3600 });
    expect(again.body).toMatchObject({ claimed: true, deduped: false, active_run_id: run });
    expect(Date.parse(again.body.expires_at)).toBeGreaterThan(Date.parse(first.body.expires_at));
    await app.expectUnchanged(async () => {
      const shorter = await claim({ ...signal, run_id: run, ttl_seconds: 60 });
      expect(shorter.body).toMatchObject({ claimed: true, deduped: false, expires_at: again.body.expires_at });
    });
    const types = await app.runtime.db
      .select({ type: ledgerEvents.eventType })
      .from(ledgerEvents)
      .where(
        and(
          eq(ledgerEvents.workspaceId, app.ws.workspaceId),
          sql`(${ledgerEvents.payloadText}::jsonb)->'claim'->>'active_run_id' = ${run}`,
        ),
      )
      .orderBy(ledgerEvents.sequence);
    expect(types.map((t) => t.type)).toEqual(['dedup.claimed', 'dedup.extended']);
  });

  it('expiry hands the claim to the next claimant', async () => {
    const signal = fresh();
    const runA = await aRun();
    const runB = await aRun();
    await claim({ ...signal, run_id: runA, ttl_seconds: 60 });
    expect((await claim({ ...signal, run_id: runB })).body.deduped).toBe(true);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 61_000);
    const taken = await claim({ ...signal, run_id: runB, ttl_seconds: 60 });
    expect(taken.body).toMatchObject({ claimed: true, deduped: false, active_run_id: runB });
    expect((await claim({ ...signal, run_id: runA })).body).toMatchObject({ deduped: true, active_run_id: runB });
  });

  it('release frees it early, only for its holder', async () => {
    const signal = fresh();
    const runA = await aRun();
    const runB = await aRun();
    await claim({ ...signal, run_id: runA });
    await app.expectUnchanged(async () => {
      const notMine = await release({ ...signal, run_id: runB });
      expect(notMine.status).toBe(200);
      expect(notMine.body).toMatchObject({ ok: true, released: false, active_run_id: runA });
    });
    const mine = await release({ ...signal, run_id: runA });
    expect(mine.body).toMatchObject({ ok: true, released: true, active_run_id: null, expires_at: null, data: { auth_mode: 'api_key' } });
    expect((await claim({ ...signal, run_id: runB })).body).toMatchObject({ claimed: true, active_run_id: runB });
  });

  it('validates: source 1–120, event_key 1–500, ttl 60–1209600 (integers), closed body; nothing written', async () => {
    await app.expectUnchanged(async () => {
      for (const body of [
        { event_key: 'k' },
        { source: '', event_key: 'k' },
        { source: 'x'.repeat(121), event_key: 'k' },
        { source: 's', event_key: 'k'.repeat(501) },
        { source: 's', event_key: 'k', ttl_seconds: 59 },
        { source: 's', event_key: 'k', ttl_seconds: 1_209_601 },
        { source: 's', event_key: 'k', ttl_seconds: 600.5 },
        { source: 's', event_key: 'k', ttl_seconds: '600' },
        { source: 's', event_key: 'k', run_id: 'run-1' },
        { source: 's', event_key: 'k', holder: 'me' },
      ]) {
        const res = await claim(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
    });
    expect((await claim({ source: 'x'.repeat(120), event_key: 'k'.repeat(500), ttl_seconds: 60 })).status).toBe(200);
    expect((await claim({ ...fresh(), ttl_seconds: 1_209_600 })).status).toBe(200);
  });

  it('50 concurrent claims of one fingerprint: exactly one claimed, the others deduped to it', async () => {
    const signal = fresh();
    const results = await Promise.all(Array.from({ length: 50 }, () => claim({ ...signal })));
    expect(results.map((r) => (r.status === 200 ? 200 : r.text))).toEqual(Array(50).fill(200));
    const winners = results.filter((r) => r.body.claimed);
    expect(winners).toHaveLength(1);
    const holder = winners[0]!.body.active_run_id;
    expect(results.filter((r) => r.body.deduped).every((r) => r.body.active_run_id === holder)).toBe(true);
    const [counted] = await query<{ n: string }>(
      app.runtime.db,
      sql`select count(*) as n from ledger_events where workspace_id = ${app.ws.workspaceId} and coalesce(payload, payload_text::jsonb)->'claim'->>'fingerprint_hash' = ${winners[0]!.body.fingerprint_hash}`,
    );
    expect(Number(counted!.n)).toBe(1);
  });

  it('is scoped to the workspace: the same fingerprint elsewhere is another claim', async () => {
    const other = await startTestAppWorkspace();
    const signal = fresh();
    expect((await claim(signal)).body.claimed).toBe(true);
    const there = await app.request('POST', '/live/dedup/claim', { body: signal, key: other });
    expect(there.body.claimed).toBe(true);
  });

  it('the claims table equals the ledger replayed', async () => {
    const replayed = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    expect(replayed.state.claims).toEqual((await loadFromTables(app.runtime.db, app.ws.workspaceId)).claims);
  });
});

async function startTestAppWorkspace(): Promise<string> {
  return (await app.createWorkspace()).apiKey;
}

if (testEngine() === 'postgres') {
  describe('failing closed (PostgreSQL)', () => {
    it('a connection terminated mid-claim answers 503 with Retry-After, writes nothing, and the next claim works', async () => {
      const signal = fresh();
      const admin = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
      const holder = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
      try {
        // Hold the workspace's ledger lock so the claim stops inside its transaction.
        const conn = await holder.reserve();
        await conn`begin`;
        await conn`select 1 from ledger_heads where workspace_id = ${app.ws.workspaceId} for update`;
        const pending = claim({ ...signal });
        let pid: number | undefined;
        for (let i = 0; i < 200 && !pid; i++) {
          const [row] = await admin`select pid from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid() limit 1`;
          pid = row?.pid;
          if (!pid) await new Promise((r) => setTimeout(r, 25));
        }
        expect(pid).toBeDefined();
        await admin`select pg_terminate_backend(${pid!})`;
        const res = await pending;
        await conn`rollback`;
        conn.release();
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(res.text).not.toMatch(/claimed/);
        const rows = await app.runtime.db.select().from(dedupClaims).where(eq(dedupClaims.eventKey, signal.event_key));
        expect(rows).toEqual([]);
        // Recovered without a restart: the pool opens a new connection.
        const next = await claim({ ...signal });
        expect(next.status).toBe(200);
        expect(next.body.claimed).toBe(true);
      } finally {
        await admin.end();
        await holder.end();
      }
    });

    it('with the database gone every claim is 503, never claimed; when it returns, claims work again', async () => {
      const proxy = await startDbProxy();
      const viaProxy = await startTestApp({}, { via: proxy.via });
      try {
        const signal = fresh();
        expect((await claim({ ...fresh() }, viaProxy)).status).toBe(200);
        await proxy.down();
        const during = await Promise.all(Array.from({ length: 5 }, () => claim({ ...signal }, viaProxy)));
        for (const res of during) {
          expect(res.status).toBe(503);
          expect(res.body.error.code).toBe('service_unavailable');
          expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
          expect(res.body.claimed).toBeUndefined();
        }
        await proxy.up();
        const after = await claim({ ...signal }, viaProxy);
        expect(after.status).toBe(200);
        expect(after.body.claimed).toBe(true);
        // Only the claim made after the return exists.
        const events = await query<{ n: string }>(
          viaProxy.runtime.db,
          sql`select count(*) as n from ledger_events where coalesce(payload, payload_text::jsonb)->'claim'->>'event_key' = ${signal.event_key}`,
        );
        expect(Number(events[0]!.n)).toBe(1);
      } finally {
        await viaProxy.close();
        await proxy.close();
      }
    });
  });
}
