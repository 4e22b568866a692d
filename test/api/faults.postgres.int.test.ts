/**
 * Faults (docs/contract.md §5.6): the database going away in the middle of a load, and lock and statement
 * timeouts. What must hold: callers hear 503 service_unavailable with Retry-After and nothing else,
 * nothing is half written, the process keeps serving, and it recovers by itself when the database
 * returns. PostgreSQL only (vitest.config.ts runs *.postgres.int.test.ts on that engine alone): a
 * TCP proxy the test controls stands between the app and the server; PGlite runs inside the
 * process and has nothing to cut.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { verifyWorkspace } from '@/server/ledger/verify';
import { startTestApp, type TestApp } from '../support/app';
import { startDbProxy, type DbProxy } from '../support/db-proxy';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `condition` every 20 ms until it holds; fails after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await sleep(20);
  }
}

describe('PostgreSQL stopping under load', () => {
  let proxy: DbProxy;
  let app: TestApp;
  afterAll(async () => {
    await app?.close();
    await proxy?.close();
  });

  it('answers only 201 or 503 with Retry-After, writes nothing partial, and recovers without a restart', async () => {
    proxy = await startDbProxy();
    app = await startTestApp({ DB_POOL_MAX: '4' }, { via: proxy.via });
    const outcomes: {
      key: string;
      title: string;
      status: number;
      retryAfter: string | null;
      code?: string;
      taskId?: string;
      started: number;
      at: number;
    }[] = [];
    let phase: 'up' | 'down' | 'back' | 'stop' = 'up';
    const worker = async () => {
      while (phase !== 'stop') {
        const key = `fault-${randomUUID()}`;
        const title = `under load ${phase}`;
        const started = performance.now();
        const res = await app.request('POST', '/work', { body: { title }, headers: { 'idempotency-key': key } });
        outcomes.push({
          key,
          title,
          status: res.status,
          retryAfter: res.headers.get('retry-after'),
          code: res.body?.error?.code,
          taskId: res.body?.data?.taskId,
          started,
          at: performance.now(),
        });
        // As a client honouring Retry-After would, roughly: no tight loop against a refusing server.
        if (res.status === 503) await sleep(100);
      }
    };
    const workers = Array.from({ length: 6 }, worker);
    // Each phase lasts until it has shown what it is for, however slow the machine.
    const seen = (title: string, status: number, n: number) => () =>
      outcomes.filter((o) => o.title === title && o.status === status).length >= n;
    await until(seen('under load up', 201, 6), 20_000);
    phase = 'down';
    await proxy.down();
    await until(seen('under load down', 503, 3), 20_000);
    phase = 'back';
    await proxy.up();
    const upAt = performance.now();
    await until(seen('under load back', 201, 6), 20_000);
    phase = 'stop';
    await Promise.all(workers);

    const refused = outcomes.filter((o) => o.status !== 201);
    expect(outcomes.filter((o) => o.status === 201).length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) {
      expect(o.status, JSON.stringify(o)).toBe(503);
      expect(o.code).toBe('service_unavailable');
      expect(o.retryAfter).toMatch(/^[1-9][0-9]*$/);
    }
    // Every request was answered promptly, during the outage too (a 503, not a wait), and the
    // service serves again with the same process and pool as soon as the database is back: no
    // request waits on a reconnect backoff (postgres.js's own grows to 20 s; ours is capped at
    // 1 s, db/postgres.ts), and the last ones all succeeded.
    for (const o of outcomes) expect(o.at - o.started, JSON.stringify(o)).toBeLessThan(2500);
    expect(outcomes.some((o) => o.started > upAt && o.status === 201)).toBe(true);
    expect(outcomes[outcomes.length - 1]!.status).toBe(201);

    // A refused request retried with its key is written once: created now, or replayed if its
    // commit had gone through before the connection was cut.
    const retryAll = async (queue: typeof refused) => {
      for (let o = queue.pop(); o; o = queue.pop()) {
        const retry = await app.request('POST', '/work', { body: { title: o.title }, headers: { 'idempotency-key': o.key } });
        expect([200, 201]).toContain(retry.status);
        o.taskId = retry.body.data.taskId;
      }
    };
    const queue = [...refused];
    await Promise.all(Array.from({ length: 6 }, () => retryAll(queue)));

    // Every key wrote exactly one task, with its receipt and its one event; nothing else exists.
    const taskIds = outcomes.map((o) => o.taskId!);
    expect(new Set(taskIds).size).toBe(outcomes.length);
    const ws = app.ws.workspaceId;
    const [row] = await query<{ tasks: number; receipts: number; events: number; orphans: number }>(
      app.runtime.db,
      sql`select
              (select count(*)::int from tasks where workspace_id = ${ws} and title like 'under load%') as tasks,
              (select count(*)::int from receipts r join tasks t on t.id = r.task_id where t.workspace_id = ${ws} and t.title like 'under load%') as receipts,
              (select count(*)::int from ledger_events where workspace_id = ${ws} and event_type = 'work.created'
                 and (payload_text::jsonb)->'task'->>'title' like 'under load%') as events,
              (select count(*)::int from tasks t where t.workspace_id = ${ws} and not exists
                 (select 1 from ledger_events e where e.workspace_id = ${ws} and e.aggregate_id = t.id)) as orphans`,
    );
    expect(row).toEqual({ tasks: outcomes.length, receipts: outcomes.length, events: outcomes.length, orphans: 0 });
    const [ids] = await query<{ n: number }>(
      app.runtime.db,
      sql`select count(*)::int as n from tasks where id = any(string_to_array(${taskIds.join(',')}, ',')::uuid[])`,
    );
    expect(ids!.n).toBe(outcomes.length);
    expect((await verifyWorkspace(app.runtime.db, ws)).verified).toBe(true);
  });
});

describe('the health check a load balancer polls (docs/operators.md, "Several instances")', () => {
  it('is 200 while the database answers, 503 with Retry-After while it does not, and 200 again when it is back', async () => {
    const proxy = await startDbProxy();
    const app = await startTestApp({}, { via: proxy.via });
    try {
      const up = await app.request('GET', '/health');
      expect(up.status).toBe(200);
      expect(up.body).toEqual({ status: 'ok', engine: 'postgres' });
      await proxy.down();
      const down = await app.request('GET', '/health');
      expect(down.status).toBe(503);
      expect(down.body.error.code).toBe('service_unavailable');
      expect(down.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
      await proxy.up();
      // The pool reconnects by itself (no restart): poll until it has.
      let back = await app.request('GET', '/health');
      const deadline = Date.now() + 20_000;
      while (back.status !== 200 && Date.now() < deadline) {
        await sleep(100);
        back = await app.request('GET', '/health');
      }
      expect(back.status).toBe(200);
    } finally {
      await app.close();
      await proxy.close();
    }
  });
});

describe('timeouts', () => {
  /** Another session holds what `statement` takes for `ms`; `holding` settles once it has it. */
  const holdFor = (url: string, ms: number, statement: (tx: postgres.TransactionSql) => Promise<unknown>) => {
    const holder = postgres(url, { max: 1, onnotice: () => undefined });
    let taken!: () => void;
    const holding = new Promise<void>((resolve) => (taken = resolve));
    const held = holder.begin(async (tx) => {
      await statement(tx);
      taken();
      await sleep(ms);
    });
    return { holding, held: held.finally(() => holder.end({ timeout: 5 })) };
  };

  it('a lock held past lock_timeout is 503 with Retry-After, and the write leaves nothing', async () => {
    const app = await startTestApp({ DB_LOCK_TIMEOUT_MS: '300', DB_STATEMENT_TIMEOUT_MS: '30000' });
    try {
      // Another session holds the workspace's ledger head: the append waits, then gives up.
      const { holding, held } = holdFor(
        app.runtime.databaseUrl!,
        1500,
        (tx) => tx`select 1 from ledger_heads where workspace_id = ${app.ws.workspaceId} for update`,
      );
      await holding;
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/work', {
          body: { title: 'Waits for the head' },
          headers: { 'idempotency-key': randomUUID() },
        });
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
        expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
      });
      await held;
      expect((await app.request('POST', '/work', { body: { title: 'After the lock' } })).status).toBe(201);
    } finally {
      await app.close();
    }
  });

  it('a statement past statement_timeout is 503 with Retry-After, and the service reads again after', async () => {
    // The lock timeout is longer than the wait, so only the statement timeout can end it.
    const app = await startTestApp({ DB_LOCK_TIMEOUT_MS: '20000', DB_STATEMENT_TIMEOUT_MS: '400' });
    try {
      expect((await app.request('GET', '/events/stream?limit=5')).status).toBe(200);
      const { holding, held } = holdFor(app.runtime.databaseUrl!, 1500, (tx) => tx`lock table ledger_events in access exclusive mode`);
      await holding;
      const res = await app.request('GET', '/events/stream?limit=5');
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
      await held;
      expect((await app.request('GET', '/events/stream?limit=5')).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
