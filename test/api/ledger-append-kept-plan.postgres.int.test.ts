/**
 * ledger_append's version lookup in a plan a connection kept from when the ledger was small
 * (drizzle/0026). PL/pgSQL keeps each connection's plans; one made while the ledger was small read
 * it sequentially (or by the primary key), filtered by aggregate and sorted, and kept doing so as
 * the workspace grew: every new aggregate (a claimed run) then read all of its events, and a bench
 * drain met it at random, claims running at half rate. Its own file: it needs a ledger
 * that is still small when its statistics are taken.
 */
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('ledger_append in a plan kept from a small ledger', () => {
  it('reads it by that key also in a plan kept from when the ledger was small', async () => {
    // Statistics of a small ledger, a connection that appends (and keeps its plans), then the
    // workspace grows by 20,000 events: the kept plan still reads an aggregate's version by its key.
    const ws = await app.createWorkspace();
    const keeper = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
    const grower = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
    const event = () => ({
      id: randomUUID(),
      ownerId: randomUUID(),
      aggregateType: 'run',
      aggregateId: randomUUID(),
      eventType: 'run.created',
      schemaVersion: 1,
      actorType: 'system',
      actorId: 'system:test',
      payloadText: '{}',
      payloadDigest: 'sha256:0',
      occurredAtCanonical: new Date().toISOString(),
      idempotencyKey: null,
      causationId: randomUUID(),
      correlationId: randomUUID(),
      contextManifestDigest: 'sha256:0',
      canonical: ['a', 'b', 'c', 'd', 'e'],
    });
    const append = (sql: postgres.Sql | postgres.TransactionSql, n: number) =>
      sql`select * from ledger_append(${ws.workspaceId}::uuid, ${JSON.stringify(Array.from({ length: n }, event))}::text::jsonb)`;
    try {
      await keeper`alter table ledger_events set (autovacuum_enabled = false)`;
      await keeper`analyze ledger_events`;
      for (let i = 0; i < 10; i++) await append(keeper, 1);
      for (let i = 0; i < 100; i++) await append(grower, 200);
      const counts = await keeper.begin(async (tx) => {
        for (let i = 0; i < 10; i++) await append(tx, 1);
        const [row] = await tx<{ seq: number; pk: number; key: number }[]>`select
            pg_stat_get_xact_numscans('ledger_events'::regclass)::int as seq,
            pg_stat_get_xact_numscans('ledger_events_workspace_id_sequence_pk'::regclass)::int as pk,
            pg_stat_get_xact_numscans('ledger_events_aggregate_version_key'::regclass)::int as key`;
        return row!;
      });
      expect(counts).toMatchObject({ seq: 0, pk: 0 });
      expect(counts.key).toBeGreaterThanOrEqual(10);
    } finally {
      await keeper`alter table ledger_events reset (autovacuum_enabled)`;
      await keeper.end();
      await grower.end();
    }
  }, 60_000);
});
