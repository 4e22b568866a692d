/**
 * Appending at COMMIT (server/ledger/append.ts appendEventsAtCommit, db/connection.ts atCommit),
 * on each engine: the events a service gets back carry stand-ins until the transaction commits
 * and their values after; appends of one transaction keep their call order; a rollback appends
 * nothing; and a statement left for COMMIT that fails fails the transaction without leaving its
 * connection inside it; POST /work to several workspaces sharing transactions (db/group.ts)
 * answers each request with its own event.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { atCommit, runStatement } from '@/db/connection';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { appendEvents, appendEventsAtCommit, type NewEvent } from '@/server/ledger/append';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { verifyWorkspace } from '@/server/ledger/verify';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  // One connection: a transaction that left it in a bad state would hand that state to the next.
  // One shared group: POST /work to different workspaces joins one transaction when they meet.
  app = await startTestApp({ DB_POOL_MAX: '1', DB_SHARED_GROUPS: '1' });
});
afterAll(async () => {
  await app?.close();
});

const actorIn = (workspaceId: string, ownerId: string): Actor => ({
  type: 'system',
  id: 'system:test',
  ownerId,
  workspaceId,
  trace: systemTrace(randomUUID()),
});
// A type no service writes, outside the registry of event types on purpose: these tests are about the append alone.
const noted = (title: string) =>
  ({ aggregateType: 'task', aggregateId: randomUUID(), eventType: 'test.noted', payload: { title } }) as unknown as NewEvent;

async function stored(workspaceId: string, ids: string[]) {
  return query<{ id: string; sequence: number; aggregate_version: number; previous_hash: string; event_hash: string }>(
    app.runtime.db,
    sql`select id::text, sequence, aggregate_version, previous_hash, event_hash from ledger_events
        where workspace_id = ${workspaceId} and id in ${ids} order by sequence`,
  );
}

describe('appending at COMMIT', () => {
  it('gives events with stand-ins until COMMIT and their stored values after; two calls append in call order', async () => {
    const ws = await app.createWorkspace();
    const actor = actorIn(ws.workspaceId, ws.ownerUserId);
    let during: LedgerEvent[] = [];
    const events = await app.runtime.db.transaction(async (tx) => {
      const first = appendEventsAtCommit(tx, actor, [noted('one'), noted('two')]);
      const second = appendEventsAtCommit(tx, actor, [noted('three')]);
      during = [...first, ...second].map((e) => ({ ...e }));
      return [...first, ...second];
    });
    // Before COMMIT nothing was known: 16-digit stand-ins, random hashes that no event has.
    for (const e of during) {
      expect(String(e.sequence)).toMatch(/^[0-9]{16}$/);
      expect(String(e.aggregateVersion)).toMatch(/^[0-9]{16}$/);
    }
    const rows = await stored(
      ws.workspaceId,
      events.map((e) => e.id),
    );
    expect(rows.map((r) => r.id)).toEqual(events.map((e) => e.id));
    expect(rows[1]!.sequence).toBe(rows[0]!.sequence + 1);
    expect(rows[2]!.sequence).toBe(rows[1]!.sequence + 1);
    expect(
      events.map((e) => ({
        id: e.id,
        sequence: e.sequence,
        aggregate_version: e.aggregateVersion,
        previous_hash: e.previousHash,
        event_hash: e.eventHash,
      })),
    ).toEqual(rows);
    expect(during.map((e) => e.eventHash)).not.toContain(rows[0]!.event_hash);
    expect((await verifyWorkspace(app.runtime.db, ws.workspaceId)).verified).toBe(true);
  });

  it('appends nothing when the transaction rolls back', async () => {
    const ws = await app.createWorkspace();
    const actor = actorIn(ws.workspaceId, ws.ownerUserId);
    let ids: string[] = [];
    const refused = new Error('roll back');
    await expect(
      app.runtime.db.transaction(async (tx) => {
        ids = appendEventsAtCommit(tx, actor, [noted('never')]).map((e) => e.id);
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(await stored(ws.workspaceId, ids)).toEqual([]);
  });

  it('refuses an immediate append after one at COMMIT, and a second workspace, in one transaction', async () => {
    const [ws, other] = [await app.createWorkspace(), await app.createWorkspace()];
    const actor = actorIn(ws.workspaceId, ws.ownerUserId);
    await expect(
      app.runtime.db.transaction(async (tx) => {
        appendEventsAtCommit(tx, actor, [noted('later')]);
        await appendEvents(tx, actor, [noted('now')]);
      }),
    ).rejects.toThrow(/appends at commit/);
    await expect(
      app.runtime.db.transaction(async (tx) => {
        appendEventsAtCommit(tx, actor, [noted('here')]);
        appendEventsAtCommit(tx, actorIn(other.workspaceId, other.ownerUserId), [noted('there')]);
      }),
    ).rejects.toThrow(/one workspace/);
  });

  it('fails the transaction with the error of a statement left for COMMIT, commits nothing, and leaves the connection clean', async () => {
    const ws = await app.createWorkspace();
    const actor = actorIn(ws.workspaceId, ws.ownerUserId);
    let ids: string[] = [];
    // The one connection of the pool serves the next statement: it must not be inside the aborted
    // transaction. (What released it too early showed under a lock timeout: the faults and
    // ledger-readers tests on PostgreSQL.)
    const failing = `select * from no_such_table /* ${randomUUID()} */`;
    await expect(
      app.runtime.db.transaction(async (tx) => {
        ids = appendEventsAtCommit(tx, actor, [noted('rolled back')]).map((e) => e.id);
        atCommit(tx, () => runStatement(tx)(failing, []));
      }),
    ).rejects.toThrow(/no_such_table/);
    expect(await stored(ws.workspaceId, ids)).toEqual([]);
    expect(await query<{ ok: number }>(app.runtime.db, sql`select 1 as ok`)).toEqual([{ ok: 1 }]);
  });

  it('POST /work to several workspaces at once (shared transactions): each answer and replay has its own event’s stored values', async () => {
    const workspaces = await Promise.all(Array.from({ length: 6 }, () => app.createWorkspace()));
    const post = (ws: (typeof workspaces)[number], i: number, key?: string) =>
      app.request('POST', '/work', {
        key: ws.apiKey,
        body: { title: `shared ${i}` },
        headers: key ? { 'Idempotency-Key': key } : {},
      });
    // Two writes to each workspace, one keyed and one not, all at once.
    const keys = workspaces.map(() => `shared-${randomUUID()}`);
    const answers = await Promise.all(workspaces.flatMap((ws, i) => [post(ws, i, keys[i]), post(ws, i)]));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201));
    for (const [i, ws] of workspaces.entries()) {
      const mine = answers.slice(2 * i, 2 * i + 2).map((a) => a.body.data);
      const rows = await stored(
        ws.workspaceId,
        mine.map((d) => d.eventId),
      );
      expect(rows).toHaveLength(2);
      for (const d of mine) {
        const row = rows.find((r) => r.id === d.eventId)!;
        expect({ aggregateVersion: d.aggregateVersion, eventHash: d.eventHash }).toEqual({
          aggregateVersion: row.aggregate_version,
          eventHash: row.event_hash,
        });
      }
      expect((await verifyWorkspace(app.runtime.db, ws.workspaceId)).verified).toBe(true);
      // The stored response (filled in at COMMIT by the database) is the answer, marked a duplicate.
      const replay = await post(ws, i, keys[i]);
      expect(replay.status).toBe(200);
      expect(replay.body.data).toEqual({ ...mine[0], duplicate: true });
    }
  });
});
