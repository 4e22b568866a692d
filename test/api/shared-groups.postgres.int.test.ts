/**
 * Shared groups (db/group.ts) against a held lock, PostgreSQL only (a lock needs a second
 * session): POST /work to three workspaces sharing one transaction while another session holds
 * one workspace's ledger head past the lock timeout. The writes to that workspace fail, once each
 * (a 503 over HTTP: metrics-db.postgres.int.test.ts); the writes to the other two commit, and
 * their chains verify.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { query } from '@/db';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { createWork } from '@/server/domain/work/create-work';
import { verifyWorkspace } from '@/server/ledger/verify';
import { startTestApp, type TestApp } from '../support/app';
import { holdLedgerHead } from '../support/held-lock';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ DB_SHARED_GROUPS: '1', DB_LOCK_TIMEOUT_MS: '300' });
});
afterAll(async () => app?.close());

it('fails only the writes whose workspace’s ledger is held past the lock timeout; the others commit', async () => {
  const [first, busy, last] = await Promise.all([app.createWorkspace(), app.createWorkspace(), app.createWorkspace()]);
  // Two writes to the locked workspace: both fail with the lock timeout, the second without
  // waiting for the lock a second time (each write's work runs once).
  const workspaces = [first!, busy!, busy!, last!];
  const runs = workspaces.map(() => 0);
  const held = busy!.workspaceId;
  const head = await holdLedgerHead(app.runtime.databaseUrl!, held);
  try {
    // Called together, as the API does for POST /work: one transaction for the three (one
    // shared group), its appends left for COMMIT.
    const outcomes = await Promise.allSettled(
      workspaces.map((ws, i) => {
        const actor: Actor = {
          type: 'system',
          id: 'system:test',
          ownerId: ws.ownerUserId,
          workspaceId: ws.workspaceId,
          trace: systemTrace(randomUUID()),
        };
        return app.runtime.db.transaction(
          async (tx) => {
            runs[i]!++;
            const created = await createWork(tx, actor, { title: 'shared', priority: 'medium' });
            const [row] = await query<{ txid: string }>(tx, sql`select txid_current()::text as txid`);
            return { taskId: created.task.id, txid: row!.txid };
          },
          { group: ws.workspaceId, acrossWorkspaces: true },
        );
      }),
    );
    await head.release();
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    for (const o of [outcomes[1], outcomes[2]]) expect((o as PromiseRejectedResult).reason).toMatchObject({ code: '55P03' });
    expect(runs).toEqual([2, 1, 1, 2]);
    // The other two ran again, together, without them.
    const committed = [outcomes[0], outcomes[3]].map((o) => (o as PromiseFulfilledResult<{ txid: string }>).value.txid);
    expect(committed[0]).toBe(committed[1]);
    for (const [i, ws] of [first!, busy!, last!].entries()) {
      const tasks = await query<{ n: number }>(
        app.runtime.db,
        sql`select count(*)::int as n from tasks where workspace_id = ${ws.workspaceId}`,
      );
      const events = await query<{ n: number }>(
        app.runtime.db,
        sql`select count(*)::int as n from ledger_events where workspace_id = ${ws.workspaceId} and event_type = 'work.created'`,
      );
      expect({ tasks: tasks[0]!.n, events: events[0]!.n }).toEqual(i === 1 ? { tasks: 0, events: 0 } : { tasks: 1, events: 1 });
      expect((await verifyWorkspace(app.runtime.db, ws.workspaceId)).verified).toBe(true);
    }
  } finally {
    await head.release();
  }
});
