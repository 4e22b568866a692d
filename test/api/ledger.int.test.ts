/** The ledger: ordering under concurrency, append-only rows, verification that finds tampering. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { GENESIS_HASH } from '@/db/schema';
import { GENESIS } from '@/server/ledger/chain';
import { newestCheckpoint } from '@/server/ledger/checkpoints';
import { readHead } from '@/server/ledger/read';
import { verifyStep, verifyWorkspace, type VerifyProgress } from '@/server/ledger/verify';
import { integrate } from '../support/ledger-tree';
import { startTestApp, type TestApp } from '../support/app';
import { testEngine } from '../support/engine';
import { internalClient } from '../support/internal';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

async function allEvents(apiKey?: string) {
  const events: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await app.request('GET', `/events/stream?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key: apiKey });
    expect(res.status).toBe(200);
    events.push(...res.body.data);
    cursor = res.body.meta.nextCursor;
    if (!res.body.meta.hasMore) return events;
  }
}

/** Rewrites a stored event as an attacker with database access would: past the append-only trigger. */
async function tamper(statement: ReturnType<typeof sql>) {
  await app.runtime.db.transaction(async (tx) => {
    await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
    await tx.execute(statement);
    await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
  });
}

describe('the ledger', () => {
  it('32 concurrent writers in one workspace get sequences 1..n in order, and the chain verifies', async () => {
    const ws = await app.createWorkspace();
    const setup = (await allEvents(ws.apiKey)).length;
    const results = await Promise.all(
      Array.from({ length: 32 }, (_, i) => app.request('POST', '/work', { key: ws.apiKey, body: { title: `writer ${i}` } })),
    );
    for (const r of results) expect(r.status).toBe(201);
    const events = await allEvents(ws.apiKey);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: setup + 32 }, (_, i) => i + 1));
    expect(events[0].previousHash).toBe(GENESIS_HASH);
    for (let i = 1; i < events.length; i++) expect(events[i].previousHash).toBe(events[i - 1].eventHash);
    const acknowledged = new Set(results.map((r) => r.body.data.eventId));
    expect(events.filter((e) => acknowledged.has(e.id))).toHaveLength(32);

    const report = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    const last = { sequence: setup + 32, hash: events[events.length - 1].eventHash };
    expect(report.body.data).toEqual({
      verified: true,
      ok: true,
      checkedEvents: setup + 32,
      lastVerified: last,
      head: last,
      firstBreak: null,
      checkpoint: null, // no checkpoint signed yet: the integrator does not run in this app
    });
  });

  it('concurrent writes to one workspace share transactions (db/group.ts); one refused among them leaves the others', async () => {
    const ws = await app.createWorkspace();
    const taken = await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'first' }, headers: { 'idempotency-key': 'taken' } });
    expect(taken.status).toBe(201);
    const before = (await allEvents(ws.apiKey)).length;
    // Every sixth write reuses that key with another body: 422, inside the shared transaction.
    const refused = (i: number) => i % 6 === 3;
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        app.request('POST', '/work', {
          key: ws.apiKey,
          body: { title: `w${i}` },
          headers: refused(i) ? { 'idempotency-key': 'taken' } : {},
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(results.map((_, i) => (refused(i) ? 422 : 201)));
    const events = await allEvents(ws.apiKey);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: before + 20 }, (_, i) => i + 1));
    expect(
      events
        .filter((e) => e.sequence > before)
        .map((e) => e.payload.task.title)
        .sort(),
    ).toEqual(results.flatMap((_, i) => (refused(i) ? [] : [`w${i}`])).sort());
    expect((await app.request('GET', '/ledger/verify', { key: ws.apiKey })).body.data.verified).toBe(true);
    // Rows written in one transaction carry one xmin: 20 writes in fewer transactions than 20. (On
    // PGlite a request's statements before its transaction wait for the open one to end, so the
    // next write only starts once the group has committed: no group has two members there.)
    const [row] = await query<{ writes: number; transactions: number }>(
      app.runtime.db,
      sql`select count(*)::int as writes, count(distinct xmin::text)::int as transactions from ledger_events
          where workspace_id = ${ws.workspaceId} and sequence > ${before}`,
    );
    expect(row!.writes).toBe(20);
    if (testEngine() === 'postgres') expect(row!.transactions).toBeLessThan(20);
  });

  it('the database refuses UPDATE, DELETE and TRUNCATE of ledger rows', async () => {
    for (const statement of [
      sql`update ledger_events set actor_id = 'x'`,
      sql`delete from ledger_events`,
      sql`truncate ledger_events cascade`,
    ]) {
      const error: unknown = await app.runtime.db.execute(statement).then(
        () => null,
        (err: unknown) => err,
      );
      // Drizzle wraps the database's error; the refusal itself is the cause.
      expect(String((error as { cause?: Error })?.cause?.message)).toMatch(/append-only/);
    }
    const [row] = await query<{ n: string | number }>(app.runtime.db, sql`select count(*) as n from ledger_events`);
    expect(Number(row?.n)).toBeGreaterThan(0);
  });

  it('reports an event tampered with in the database at its sequence', async () => {
    const ws = await app.createWorkspace();
    for (let i = 0; i < 5; i++) await app.request('POST', '/work', { key: ws.apiKey, body: { title: `t${i}` } });
    const events = await allEvents(ws.apiKey);
    const victim = events[events.length - 3];
    await tamper(
      sql`update ledger_events set payload_text = jsonb_set(payload_text::jsonb, '{task,title}', '"rewritten"')::text
          where workspace_id = ${ws.workspaceId} and sequence = ${victim.sequence}`,
    );
    const res = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.data.verified).toBe(false);
    expect(res.body.data.ok, 'the deprecated ok says the same').toBe(false);
    expect(res.body.data.firstBreak).toMatchObject({
      sequence: victim.sequence,
      eventId: victim.id,
      reason: 'payload_digest_mismatch',
    });
    expect(res.body.data.checkedEvents).toBe(victim.sequence - 1);
  });

  it('reports a forged actor, and a deleted event, at their sequences', async () => {
    const ws = await app.createWorkspace();
    for (let i = 0; i < 4; i++) await app.request('POST', '/work', { key: ws.apiKey, body: { title: `t${i}` } });
    const events = await allEvents(ws.apiKey);
    const forged = events[events.length - 2];
    await tamper(
      sql`update ledger_events set actor_id = 'forged' where workspace_id = ${ws.workspaceId} and sequence = ${forged.sequence}`,
    );
    expect((await verifyWorkspace(app.runtime.db, ws.workspaceId)).firstBreak).toMatchObject({
      sequence: forged.sequence,
      reason: 'event_hash_mismatch',
    });

    const other = await app.createWorkspace();
    await app.request('POST', '/work', { key: other.apiKey, body: { title: 'a' } });
    await app.request('POST', '/work', { key: other.apiKey, body: { title: 'b' } });
    const otherEvents = await allEvents(other.apiKey);
    const removed = otherEvents[otherEvents.length - 2];
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(sql`delete from ledger_events where workspace_id = ${other.workspaceId} and sequence = ${removed.sequence}`);
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    });
    expect((await verifyWorkspace(app.runtime.db, other.workspaceId)).firstBreak).toMatchObject({
      sequence: removed.sequence + 1,
      reason: 'sequence_gap',
    });
  });

  it('verifies payloads whose canonical form needs escapes, non-ASCII and number formatting', async () => {
    const ws = await app.createWorkspace();
    const titles = ['emoji 😀 and 𝄞', 'line\u2028separator', 'quote " backslash \\ slash /', 'tab\tnew\nline\u0001', 'ß€ü'];
    for (const title of titles) {
      const res = await app.request('POST', '/work', { key: ws.apiKey, body: { title, estimate_hours: 0.1 + 0.2 } });
      expect(res.status).toBe(201);
    }
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'big', estimate_hours: 99999.999999999 } });
    const report = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    expect(report.body.data.firstBreak).toBeNull();
    expect(report.body.data.verified).toBe(true);
  });

  it('the head only moves forward, and events past a rewound head are reported', async () => {
    const ws = await app.createWorkspace();
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'a' } });
    const rewind = sql`update ledger_heads set sequence = sequence - 1 where workspace_id = ${ws.workspaceId}`;
    const refused: unknown = await app.runtime.db.execute(rewind).then(
      () => null,
      (err: unknown) => err,
    );
    expect(String((refused as { cause?: Error })?.cause?.message)).toMatch(/only moves forward/);

    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_heads disable trigger ledger_heads_forward_only`);
      await tx.execute(
        sql`update ledger_heads h set sequence = h.sequence - 1,
              head_hash = (select previous_hash from ledger_events e where e.workspace_id = h.workspace_id and e.sequence = h.sequence)
            where h.workspace_id = ${ws.workspaceId}`,
      );
      await tx.execute(sql`alter table ledger_heads enable trigger ledger_heads_forward_only`);
    });
    const events = await allEvents(ws.apiKey);
    const res = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
    expect(res.body.data.verified).toBe(false);
    expect(res.body.data.firstBreak).toMatchObject({ sequence: events.length, reason: 'head_mismatch' });
    expect(res.body.data.head.sequence).toBe(events.length - 1);
  });

  it('a write that fails after its event was appended leaves nothing: no row, no event, no stored response', async () => {
    // Make the last step of an idempotent write (storing its response) fail, after the append.
    await app.runtime.db.execute(sql`create function fail_store() returns trigger language plpgsql as $$
      begin raise exception 'injected failure'; end $$`);
    await app.runtime.db.execute(
      sql`create trigger fail_store before update on idempotency_records for each row execute function fail_store()`,
    );
    try {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/work', {
          body: { title: 'doomed' },
          headers: { 'idempotency-key': `doomed-${Date.now()}` },
        });
        expect(res.status).toBe(500);
        expect(res.body.error.code).toBe('internal_error');
        expect(res.text).not.toContain('injected failure');
      });
    } finally {
      await app.runtime.db.execute(sql`drop trigger fail_store on idempotency_records`);
      await app.runtime.db.execute(sql`drop function fail_store()`);
    }
    const verify = await app.request('GET', '/ledger/verify');
    expect(verify.body.data.verified).toBe(true);
  });

  it('a rolled-back append leaves no gap', async () => {
    const ws = await app.createWorkspace();
    const before = (await allEvents(ws.apiKey)).length;
    await expect(
      app.runtime.db.transaction(async (tx) => {
        await tx.execute(sql`select * from ledger_append(${ws.workspaceId}::uuid, '[]'::jsonb)`);
        await tx.execute(sql`update ledger_heads set sequence = sequence + 1 where workspace_id = ${ws.workspaceId}`);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'after rollback' } });
    const events = await allEvents(ws.apiKey);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: before + 1 }, (_, i) => i + 1));
  });

  it('aggregateVersion counts per aggregate, sequence per workspace', async () => {
    const rows = await query<{ aggregate_id: string; versions: number[] }>(
      app.runtime.db,
      sql`select aggregate_id, array_agg(aggregate_version order by sequence) as versions
          from ledger_events where workspace_id = ${app.ws.workspaceId} group by aggregate_id`,
    );
    for (const row of rows) expect(row.versions.map(Number)).toEqual(row.versions.map((_, i) => i + 1));
  });

  it(`runs on ${testEngine()}`, async () => {
    const res = await app.request('GET', '/health', { key: null });
    expect(res.body).toEqual({ status: 'ok', engine: testEngine() });
  });
});

/** Verifies in steps of `limit`, as the web interface does; returns the report and the progress seen. */
async function verifyInSteps(workspaceId: string, limit: number) {
  const seen: number[] = [];
  let progress: VerifyProgress = { position: GENESIS, checkedEvents: 0, head: null };
  for (;;) {
    const step = await verifyStep(app.runtime.db, workspaceId, progress, limit);
    if (step.done) return { report: step.report, seen };
    progress = step.progress;
    seen.push(progress.checkedEvents);
  }
}

describe('verification in steps (the web interface’s “Verify the chain”)', () => {
  it('shows progress and ends with the report verifyWorkspace gives, for an intact chain and a tampered one', async () => {
    const ws = await app.createWorkspace();
    for (let i = 0; i < 8; i++) await app.request('POST', '/work', { key: ws.apiKey, body: { title: `s${i}` } });
    const whole = await verifyWorkspace(app.runtime.db, ws.workspaceId);
    expect(whole.verified).toBe(true);
    const stepped = await verifyInSteps(ws.workspaceId, 3);
    expect(stepped.report).toEqual(whole);
    expect(stepped.seen.length).toBeGreaterThan(2);
    expect(stepped.seen).toEqual([...stepped.seen].sort((a, b) => a - b));

    const events = await allEvents(ws.apiKey);
    const victim = events[events.length - 2];
    await tamper(
      sql`update ledger_events set actor_id = 'forged' where workspace_id = ${ws.workspaceId} and sequence = ${victim.sequence}`,
    );
    const broken = await verifyInSteps(ws.workspaceId, 3);
    expect(broken.report).toEqual(await verifyWorkspace(app.runtime.db, ws.workspaceId));
    expect(broken.report.firstBreak).toMatchObject({ sequence: victim.sequence, reason: 'event_hash_mismatch' });
  });

  it('answers 400, not 500, when the progress sent back names a checkpoint not on record or a tree of the wrong shape', async () => {
    const ws = await app.createWorkspace();
    const viewer = await app.member('viewer', ws.workspaceId);
    for (let i = 0; i < 4; i++) expect((await app.request('POST', '/work', { key: ws.apiKey, body: { title: `w${i}` } })).status).toBe(201);
    await integrate(app, ws);
    const signed = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    const head = (await readHead(app.runtime.db, ws.workspaceId))!;
    const [third] = await query<{ event_hash: string }>(
      app.runtime.db,
      sql`select event_hash from ledger_events where workspace_id = ${ws.workspaceId} and sequence = 3`,
    );
    const api = internalClient(app.runtime);
    const step = (signedPart: { treeSize: number; rootHash: string; tree: string[] }) =>
      api.query(
        'ledger.verifyStep',
        {
          workspace_id: ws.workspaceId,
          progress: {
            position: { sequence: 3, hash: third!.event_hash },
            checkedEvents: 3,
            head: { sequence: head.sequence, hash: head.headHash },
            signed: signedPart,
          },
        },
        { session: viewer.session },
      );
    const madeUp = await step({ treeSize: signed.treeSize, rootHash: Buffer.alloc(32, 9).toString('base64'), tree: [] });
    expect(madeUp.status).toBe(400);
    expect(madeUp.code).toBe('validation_failed');
    expect(madeUp.body.error.message).toMatch(/not on record/);
    // Three events verified make two subtrees (2 + 1), not none.
    const misshapen = await step({ treeSize: signed.treeSize, rootHash: signed.root.toString('base64'), tree: [] });
    expect(misshapen.status).toBe(400);
    expect(misshapen.code).toBe('validation_failed');
    expect(misshapen.body.error.message).toMatch(/3 events make 2/);
  });

  it('is for members of the workspace only', async () => {
    const ws = await app.createWorkspace();
    const viewer = await app.member('viewer', ws.workspaceId);
    const outsider = await app.member('viewer');
    const api = internalClient(app.runtime);
    const mine = await api.query('ledger.verifyStep', { workspace_id: ws.workspaceId }, { session: viewer.session });
    expect(mine.status).toBe(200);
    expect(mine.data).toMatchObject({ done: true, report: { verified: true } });
    const theirs = await api.query('ledger.verifyStep', { workspace_id: ws.workspaceId }, { session: outsider.session });
    expect(theirs.status).toBe(403);
    const browse = await api.query('ledger.browse', { workspace_id: ws.workspaceId, limit: 2 }, { session: viewer.session });
    expect(browse.data.events.map((e: { sequence: number }) => e.sequence)).toEqual(
      [...browse.data.events.map((e: { sequence: number }) => e.sequence)].sort((a: number, b: number) => b - a),
    );
    expect(browse.data.olderAt).toBe(browse.data.events[1].sequence - 1);
    expect((await api.query('ledger.browse', { workspace_id: ws.workspaceId }, { session: outsider.session })).status).toBe(403);
  });
});
