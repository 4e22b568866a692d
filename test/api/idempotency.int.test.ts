/** Idempotency-Key on POST /work (docs/contract.md §3). */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import postgres from 'postgres';
import { startTestApp, type TestApp } from '../support/app';
import { testEngine } from '../support/engine';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const post = (body: unknown, key: string, apiKey?: string) =>
  app.request('POST', '/work', { body, headers: { 'idempotency-key': key }, key: apiKey });

async function workEvents(taskId: string): Promise<number> {
  const [row] = await query<{ n: number | string }>(
    app.runtime.db,
    sql`select count(*) as n from ledger_events where event_type = 'work.created' and aggregate_id = ${taskId}`,
  );
  return Number(row?.n);
}

describe('Idempotency-Key', () => {
  it('replays the original response with 200 and duplicate: true, writing nothing', async () => {
    const key = `k-${randomUUID()}`;
    const first = await post({ title: 'Once', priority: 'high' }, key);
    expect(first.status).toBe(201);
    const before = await app.counts();
    const again = await post({ priority: 'high', title: 'Once' }, key); // same body, other key order
    expect(again.status).toBe(200);
    expect(await app.counts()).toEqual(before);
    expect(again.body.data).toEqual({ ...first.body.data, duplicate: true });
    expect(again.body.meta).toEqual({ ...first.body.meta, duplicate: true });
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await workEvents(first.body.data.taskId)).toBe(1);
  });

  it('records the key on the event', async () => {
    const key = `k-${randomUUID()}`;
    const res = await post({ title: 'Keyed' }, key);
    const page = await app.request('GET', '/events/stream?type=work.created&limit=100');
    expect(page.body.data.find((e: { id: string }) => e.id === res.body.data.eventId).idempotencyKey).toBe(key);
  });

  it('refuses the same key with a different body: 422 idempotency_conflict, nothing written', async () => {
    const key = `k-${randomUUID()}`;
    expect((await post({ title: 'Original' }, key)).status).toBe(201);
    const before = await app.counts();
    const res = await post({ title: 'Changed' }, key);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('idempotency_conflict');
    expect(await app.counts()).toEqual(before);
  });

  it('refuses a malformed key with 400 invalid_idempotency_key before writing', async () => {
    const before = await app.counts();
    for (const key of ['-leading-dash', 'has space', 'x'.repeat(201), 'semi;colon', 'caf\u00e9']) {
      const res = await app.request('POST', '/work', { body: { title: 'x' }, headers: { 'idempotency-key': key } });
      expect(res.status, key).toBe(400);
      expect(res.body.error.code).toBe('invalid_idempotency_key');
    }
    expect(await app.counts()).toEqual(before);
  });

  it('accepts the longest and most varied legal key', async () => {
    const key = `A${'b.c_d:e/f-'.repeat(19)}123456789`.slice(0, 200);
    expect(key).toHaveLength(200);
    expect((await post({ title: 'long key' }, key)).status).toBe(201);
  });

  it('keeps keys of one workspace invisible to another', async () => {
    const other = await app.createWorkspace();
    const key = `shared-${randomUUID()}`;
    const mine = await post({ title: 'Mine' }, key);
    const theirs = await post({ title: 'Theirs' }, key, other.apiKey);
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.taskId).not.toBe(mine.body.data.taskId);
    expect(theirs.body.meta.workspaceId).toBe(other.workspaceId);
    const replay = await post({ title: 'Theirs' }, key, other.apiKey);
    expect(replay.body.data.taskId).toBe(theirs.body.data.taskId);
  });

  it('a failed request stores no response: the same key then succeeds', async () => {
    const key = `k-${randomUUID()}`;
    const failed = await post({ title: 'x', initiative_id: randomUUID(), workstream_id: randomUUID(), milestone_id: randomUUID() }, key);
    expect(failed.status).toBe(404);
    const ok = await post({ title: 'x' }, key);
    expect(ok.status).toBe(201);
  });

  it('one key raced with different bodies writes once; the others conflict or replay', async () => {
    const key = `race-bodies-${randomUUID()}`;
    const before = await app.counts();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => post({ title: `body ${i % 3}` }, key)));
    const created = results.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    const winner = created[0]!.body.data.task.title;
    for (const r of results) {
      if (r.status === 201) continue;
      if (r.status === 200) expect(r.body.data.task.title).toBe(winner);
      else expect([422, 409]).toContain(r.status);
    }
    const after = await app.counts();
    expect(after.events! - before.events!).toBe(1);
  });

  it('a stored response that fails to be written fails the request: nothing of it commits, and the key stays free', async () => {
    // The store is sent with COMMIT, without waiting for its answer (server/api/mutation.ts): its
    // failure must still reach the caller and roll back the task, receipt and event before it.
    const key = `store-fails-${randomUUID()}`;
    await app.runtime.db.execute(
      sql.raw(`create function test_refuse_store() returns trigger language plpgsql as $$
        begin
          if new.key = '${key}' and new.response_status is not null then
            raise exception 'test: store refused';
          end if;
          return new;
        end $$`),
    );
    await app.runtime.db.execute(
      sql`create trigger test_refuse_store before update on idempotency_records for each row execute function test_refuse_store()`,
    );
    try {
      await app.expectUnchanged(async () => {
        const res = await post({ title: 'Not stored' }, key);
        expect(res.status).toBe(500);
        expect(res.body.error.code).toBe('internal_error');
      });
      const [record] = await query(app.runtime.db, sql`select 1 from idempotency_records where key = ${key}`);
      expect(record).toBeUndefined();
    } finally {
      await app.runtime.db.execute(sql`drop trigger test_refuse_store on idempotency_records`);
      await app.runtime.db.execute(sql`drop function test_refuse_store()`);
    }
    expect((await post({ title: 'Not stored' }, key)).status).toBe(201);
  });

  it('without the header a request is simply not idempotent', async () => {
    const a = await app.request('POST', '/work', { body: { title: 'Twice' } });
    const b = await app.request('POST', '/work', { body: { title: 'Twice' } });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.body.data.taskId).not.toBe(b.body.data.taskId);
  });
});

// On PostgreSQL a first request can still hold its key when a retry arrives (on PGlite transactions
// run one at a time, so the retry always finds the first one finished).
if (testEngine() === 'postgres') {
  describe('Idempotency-Key held by a request still running', () => {
    it('is 409 idempotency_in_progress once the lock timeout passes, and writes nothing', async () => {
      const impatient = await startTestApp({ DB_LOCK_TIMEOUT_MS: '300' });
      const holder = postgres(impatient.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
      const key = `held-${randomUUID()}`;
      try {
        const reserved = await holder.reserve();
        await reserved`begin`;
        await reserved`insert into idempotency_records (workspace_id, key, fingerprint, expires_at)
                       values (${impatient.ws.workspaceId}, ${key}, 'first-request', now() + interval '1 day')`;
        const before = await impatient.counts();
        const res = await impatient.request('POST', '/work', { body: { title: 'retry' }, headers: { 'idempotency-key': key } });
        expect(res.status).toBe(409);
        expect(res.body.error.code).toBe('idempotency_in_progress');
        expect(res.body.error.retryAfter).toBe(1);
        expect(res.headers.get('retry-after')).toBe('1');
        await reserved`rollback`;
        reserved.release();
        expect(await impatient.counts()).toEqual(before);
        // Once the first request gave up, the key is free.
        const ok = await impatient.request('POST', '/work', { body: { title: 'retry' }, headers: { 'idempotency-key': key } });
        expect(ok.status).toBe(201);
      } finally {
        await holder.end();
        await impatient.close();
      }
    });
  });
}
