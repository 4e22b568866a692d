/**
 * The stored response's statement runs under the workspace's append lock (it goes with COMMIT,
 * behind the append): its plan must read the appended events by id, one index probe each, never
 * the whole ledger. PostgreSQL caches a generic plan for a prepared statement after a few runs, so
 * the plan is checked as a generic one (plan_cache_mode = force_generic_plan) on a database whose
 * statistics are those of a new one: where a join of the event ids with ledger_events became a
 * hash join over a sequential scan of the table.
 */
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '@/db';
import { systemTrace } from '@/server/domain/actor';
import { storeSealedResponseAtCommit } from '@/server/domain/idempotency';
import { appendAtCommitOf, appendEventsAtCommit, type NewEvent } from '@/server/ledger/append';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('the stored response’s statement', () => {
  it('reads the appended events by index, even as a generic plan', async () => {
    const logged: { text: string; params: unknown[] }[] = [];
    const handle = await openDatabase({
      url: app.runtime.databaseUrl!,
      poolMax: 1,
      logger: { logQuery: (text, params) => void logged.push({ text, params: [...params] }) },
    });
    const sql = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
    try {
      const actor = {
        type: 'system' as const,
        id: 'system:test',
        ownerId: app.ws.ownerUserId,
        workspaceId: app.ws.workspaceId,
        trace: systemTrace(randomUUID()),
      };
      await handle.db.transaction(async (tx) => {
        // A type no service writes, outside the registry of event types on purpose: the plan is what this is about.
        appendEventsAtCommit(tx, actor, [
          { aggregateType: 'task', aggregateId: randomUUID(), eventType: 'test.noted', payload: {} } as unknown as NewEvent,
        ]);
        storeSealedResponseAtCommit(tx, app.ws.workspaceId, `plan-${randomUUID()}`, 201, '{}', appendAtCommitOf(tx)!);
      });
      const store = logged.find((s) => s.text.includes('fill_stand_ins('));
      expect(store).toBeDefined();
      await sql`set plan_cache_mode = force_generic_plan`;
      await sql.unsafe(`prepare store_plan as ${store!.text}`);
      // EXECUTE's arguments as literals (a parameter there has no type to infer).
      const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
      const rows = await sql.unsafe(`explain execute store_plan(${store!.params.map(literal).join(', ')})`);
      const plan = rows.map((r) => r['QUERY PLAN'] as string);
      expect(plan.join('\n')).toMatch(/Index Scan using \S+ on ledger_events/);
      expect(plan.join('\n')).not.toMatch(/Seq Scan on ledger_events/);
    } finally {
      await sql.end({ timeout: 2 });
      await handle.close();
    }
  });
});
