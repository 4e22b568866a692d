/**
 * GET /tasks?ready=true on a queue that grew after the server had served it small, with no ANALYZE
 * since (the page must not depend on fresh statistics). The page used to be read as ids,
 * then its rows fetched by id in a second statement, prepared once: planned while the table was
 * small, as a sequential scan, and kept so as it grew (15 × slower at 100,000 tasks). Read off the
 * scan counters PostgreSQL keeps: once grown, serving pages scans the tasks table sequentially
 * never.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxIds } from '@/server/domain/workspaces/ids';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('the ready queue as it grows', () => {
  it('reads its pages by index, also after a bulk fill the planner has no statistics of', async () => {
    const ws = await app.createWorkspace();
    const sql = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
    const page = async () => {
      const res = await app.request('GET', '/tasks?ready=true&sort=priority&limit=50', { key: ws.apiKey });
      expect(res.status).toBe(200);
      return res.body.data as { id: string }[];
    };
    const seqScans = async () => Number((await sql`select seq_scan from pg_stat_user_tables where relname = 'tasks'`)[0]!.seq_scan);
    try {
      for (let i = 0; i < 3; i++)
        expect((await app.request('POST', '/work', { key: ws.apiKey, body: { title: `small ${i}` } })).status).toBe(201);
      // Past the five custom plans after which PostgreSQL may keep a prepared statement's generic plan.
      for (let i = 0; i < 12; i++) expect(await page()).toHaveLength(3);
      const inbox = inboxIds(ws.workspaceId);
      await sql`
        insert into tasks (id, workspace_id, initiative_id, workstream_id, milestone_id, title, priority, status, created_at, updated_at)
        select gen_random_uuid(), ${ws.workspaceId}, ${inbox.initiativeId}, ${inbox.workstreamId}, ${inbox.milestoneId},
               'bulk ' || g, (array['low','medium','high','urgent'])[1 + g % 4], 'todo',
               timestamptz '2026-01-01' + g * interval '1 second', timestamptz '2026-01-01' + g * interval '1 second'
        from generate_series(1, 20000) g`;
      expect((await sql`select last_analyze, last_autoanalyze from pg_stat_user_tables where relname = 'tasks'`)[0]).toEqual({
        last_analyze: null,
        last_autoanalyze: null,
      });
      // An idle backend flushes its counters within 10 s (PGSTAT_IDLE_INTERVAL): wait until they are still.
      const settled = async () => {
        let last = await seqScans();
        for (let waited = 0; waited < 15_000; waited += 500) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          const now = await seqScans();
          if (now === last && waited >= 1_000) return now;
          last = now;
        }
        return last;
      };
      const before = await settled();
      for (let i = 0; i < 12; i++) expect(await page()).toHaveLength(50);
      await new Promise((resolve) => setTimeout(resolve, 11_000));
      expect((await seqScans()) - before).toBe(0);
    } finally {
      await sql.end();
    }
  }, 60_000);
});
