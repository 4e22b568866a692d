/**
 * ledger_append finds each event's aggregate version by the aggregate's key, on a database whose
 * statistics are those of a new one (never ANALYZEd). As `max(aggregate_version)` it was planned as
 * a read of the workspace's events by ledger_events_type_idx, filtered, one more row for every event
 * appended: claims in a young workspace ran at a fifth of their rate. Read off the index
 * usage counters PostgreSQL keeps: the appends use the (workspace, aggregate, version) key and never
 * the event-type index.
 */
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

/** ledger_events' index scans by index name, once PostgreSQL has counted at least `least` more on `key` than `before`. */
async function scansAfter(sql: postgres.Sql, before: Record<string, number>, key: string, least: number) {
  const scans = async () => {
    const rows = await sql<{ indexrelname: string; idx_scan: string }[]>`
      select indexrelname, idx_scan from pg_stat_user_indexes where relname = 'ledger_events'`;
    return Object.fromEntries(rows.map((r) => [r.indexrelname, Number(r.idx_scan)]));
  };
  if (Object.keys(before).length === 0) return scans();
  // An idle backend flushes its counters within 10 s (PGSTAT_IDLE_INTERVAL): until the lookups are counted.
  let after = await scans();
  for (let waited = 0; (after[key] ?? 0) - (before[key] ?? 0) < least && waited < 15_000; waited += 250) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    after = await scans();
  }
  return after;
}

describe('ledger_append on a young ledger', () => {
  it('reads an aggregate’s last version by its key, not by scanning the workspace’s events', async () => {
    const sql = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
    try {
      expect((await sql`select last_analyze, last_autoanalyze from pg_stat_user_tables where relname = 'ledger_events'`)[0]).toEqual({
        last_analyze: null,
        last_autoanalyze: null,
      });
      const before = await scansAfter(sql, {}, '', 0);
      for (let i = 0; i < 40; i++) expect((await app.request('POST', '/work', { body: { title: `appended ${i}` } })).status).toBe(201);
      const key = 'ledger_events_aggregate_version_key';
      const after = await scansAfter(sql, before, key, 40);
      expect(after[key]! - before[key]!).toBeGreaterThanOrEqual(40);
      expect(after['ledger_events_type_idx']! - before['ledger_events_type_idx']!).toBe(0);
    } finally {
      await sql.end();
    }
  });
});
