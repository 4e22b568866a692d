/**
 * The integrator's passes run side by side (PostgreSQL: another connection holds one workspace's
 * tree row, as a slow pass would). One after another, 64 busy workspaces made the last wait over a
 * second for the rest each period, and checkpoints lagged past 2 s (docs/performance.md).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newestCheckpoint } from '@/server/ledger/checkpoints';
import { runIntegrator } from '@/server/ledger/integrator';
import { readHead } from '@/server/ledger/read';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { signingSettings, writeWork } from '../support/ledger-tree';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const signedSize = async (ws: TestWorkspace) => (await newestCheckpoint(app.runtime.db, ws.workspaceId))?.treeSize ?? 0;
const headOf = async (ws: TestWorkspace) => (await readHead(app.runtime.db, ws.workspaceId))?.sequence ?? 0;

describe('the ledger integrator', () => {
  it('signs the other workspaces while one pass waits, and that one once it is let go', async () => {
    const settings = signingSettings(app);
    const workspaces = [app.ws, await app.createWorkspace(), await app.createWorkspace()];
    for (const ws of workspaces) await writeWork(app, ws, 3);
    await runIntegrator(app.runtime.db, settings, 1_000); // every tree row exists and is current
    for (const ws of workspaces) await writeWork(app, ws, 2);
    // The integrator takes workspaces in id order: hold up the first one's pass.
    const [held, ...others] = [...workspaces].sort((a, b) => (a.workspaceId < b.workspaceId ? -1 : 1));
    const heldAt = await signedSize(held!);
    const blocker = postgres(app.runtime.databaseUrl!, { max: 1, onnotice: () => undefined });
    try {
      const tx = await blocker.reserve();
      await tx`begin`;
      await tx`select 1 from ledger_trees where workspace_id = ${held!.workspaceId} for update`;
      const run = runIntegrator(app.runtime.db, settings, 1_000);
      // Well within the app's lock_timeout (5 s), after which the held pass would fail.
      for (const ws of others) await expect.poll(() => signedSize(ws), { timeout: 3_000 }).toBe(await headOf(ws));
      expect(await signedSize(held!)).toBe(heldAt);
      await tx`rollback`;
      tx.release();
      const passes = await run;
      expect(passes.map((p) => [p.workspaceId, p.outcome])).toEqual([held!, ...others].map((ws) => [ws.workspaceId, 'extended']));
      expect(await signedSize(held!)).toBe(await headOf(held!));
    } finally {
      await blocker.end({ timeout: 5 });
    }
  });
});
