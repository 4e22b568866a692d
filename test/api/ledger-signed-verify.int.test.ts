/**
 * Verifying the chain against what the log signed (server/ledger/signed.ts), on both engines: GET
 * /ledger/verify, npm run ledger:verify's parallel verifier and the web page's verification in
 * steps all check the newest signed checkpoint's signature, that the chain reaches its size, and
 * that the Merkle root of its first tree_size events is the signed root. Cutting the newest events
 * and fixing the head row, which the chain's own links cannot show, is BROKEN. And
 * projections:rebuild rebuilds the tree from the events (clearing its alarm), which the
 * integrator then signs.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import type { VerifyReport } from '@/server/ledger/chain';
import { newestCheckpoint } from '@/server/ledger/checkpoints';
import { integrateWorkspace, workspacesToIntegrate } from '@/server/ledger/integrator';
import { eventLeafHash, hashesOf, inclusionPlan, rootOfLeaves, verifyInclusion } from '@/server/ledger/merkle';
import { GENESIS } from '@/server/ledger/chain';
import { verifyStep, verifyWorkspace, type VerifyProgress } from '@/server/ledger/verify';
import { verifyWorkspaceParallel } from '@/server/ledger/verify-parallel';
import { readNodes } from '@/server/ledger/tiles';
import { rebuildProjections } from '@/server/projections/rebuild';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { integrate, signingSettings, writeWork } from '../support/ledger-tree';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
});
afterAll(async () => app?.close());

/** An operator with the database keeps the first `keep` events and moves the head back to the last of them. */
async function cutTo(ws: TestWorkspace, keep: number): Promise<void> {
  await app.runtime.db.transaction(async (tx) => {
    await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
    await tx.execute(sql`alter table ledger_heads disable trigger ledger_heads_forward_only`);
    await tx.execute(sql`delete from ledger_events where workspace_id = ${ws.workspaceId} and sequence > ${keep}`);
    await tx.execute(
      sql`update ledger_heads set sequence = ${keep},
            head_hash = (select event_hash from ledger_events where workspace_id = ${ws.workspaceId} and sequence = ${keep})
          where workspace_id = ${ws.workspaceId}`,
    );
    await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    await tx.execute(sql`alter table ledger_heads enable trigger ledger_heads_forward_only`);
  });
}

/** The three verifiers' reports: GET /ledger/verify, the parallel one (ledger:verify), and the page's steps (3 events a step). */
async function reports(ws: TestWorkspace): Promise<{ rest: VerifyReport; parallel: VerifyReport; steps: VerifyReport }> {
  const res = await app.request('GET', '/ledger/verify', { key: ws.apiKey });
  expect(res.status, res.text).toBe(200);
  const { ok: _ok, ...rest } = res.body.data as VerifyReport & { ok: boolean };
  const parallel = await verifyWorkspaceParallel(app.runtime, ws.workspaceId, { workers: 2, pageSize: 4 });
  let progress: VerifyProgress = { position: GENESIS, checkedEvents: 0, head: null };
  let steps: VerifyReport | undefined;
  for (let n = 0; !steps && n < 100; n++) {
    // Through JSON, as the page sends it back.
    const step = await verifyStep(app.runtime.db, ws.workspaceId, JSON.parse(JSON.stringify(progress)) as VerifyProgress, 3);
    if (step.done) steps = step.report;
    else progress = step.progress;
  }
  return { rest, parallel, steps: steps! };
}

/** The root RFC 9162 gives over the workspace's first `size` events, from the table. */
async function rootOver(ws: TestWorkspace, size: number): Promise<string> {
  const rows = await query<{ event_hash: string }>(
    app.runtime.db,
    sql`select event_hash from ledger_events where workspace_id = ${ws.workspaceId} and sequence <= ${size} order by sequence`,
  );
  return rootOfLeaves(rows.map((r) => eventLeafHash(r.event_hash))).toString('base64');
}

describe('verification against the newest signed checkpoint', () => {
  it('holds for an intact chain, in all three verifiers, and names the checkpoint it checked', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 9);
    await integrate(app, ws);
    await writeWork(app, ws, 2); // past the signed size: judged by the chain alone
    const signed = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    const { rest, parallel, steps } = await reports(ws);
    for (const report of [rest, parallel, steps]) {
      expect(report).toMatchObject({
        verified: true,
        firstBreak: null,
        checkpoint: { treeSize: signed.treeSize, rootHash: await rootOver(ws, signed.treeSize), keyId: signed.keyId, holds: true },
      });
      expect(report.lastVerified.sequence).toBe(signed.treeSize + 2);
    }
    expect(parallel).toEqual(rest);
    expect(steps).toEqual(rest);
  });

  it('says null before the first checkpoint', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 2);
    const { rest, parallel, steps } = await reports(ws);
    for (const report of [rest, parallel, steps]) expect(report).toMatchObject({ verified: true, checkpoint: null });
  });

  it('is BROKEN when the newest events are cut and the head fixed: the chain ends before the signed size', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 8);
    await integrate(app, ws);
    const signed = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    await cutTo(ws, signed.treeSize - 3);
    const { rest, parallel, steps } = await reports(ws);
    for (const report of [rest, parallel, steps]) {
      expect(report).toMatchObject({
        verified: false,
        // The chain's own links and head hold: only the signed size shows the cut.
        lastVerified: { sequence: signed.treeSize - 3 },
        head: { sequence: signed.treeSize - 3 },
        firstBreak: {
          sequence: signed.treeSize - 2,
          reason: 'checkpoint_beyond_head',
          expected: `a chain of at least ${signed.treeSize} events (the signed checkpoint's tree size)`,
          actual: `the chain ends at ${signed.treeSize - 3}`,
        },
        checkpoint: { treeSize: signed.treeSize, holds: false },
      });
    }
  });

  it('is BROKEN when events were cut and others written in their place: the root at the signed size differs', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 6);
    await integrate(app, ws);
    const signed = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    await cutTo(ws, signed.treeSize - 2);
    await writeWork(app, ws, 4); // a chain that links, through the signed size, with other events
    const { rest, parallel, steps } = await reports(ws);
    for (const report of [rest, parallel, steps]) {
      expect(report).toMatchObject({
        verified: false,
        lastVerified: { sequence: signed.treeSize + 2 },
        firstBreak: {
          sequence: signed.treeSize,
          reason: 'checkpoint_root_mismatch',
          expected: signed.root.toString('base64'),
          actual: await rootOver(ws, signed.treeSize),
        },
        checkpoint: { holds: false },
      });
    }
  });

  it('is BROKEN when the stored checkpoint’s signature does not verify', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 3);
    await integrate(app, ws);
    const signed = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    // The same note with another size: its signature no longer covers its text.
    const forged = signed.note.replace(`\n${signed.treeSize}\n`, `\n${signed.treeSize - 1}\n`);
    await app.runtime.db.execute(
      sql`update ledger_checkpoints set note = ${forged} where workspace_id = ${ws.workspaceId} and tree_size = ${signed.treeSize}`,
    );
    const { rest, parallel, steps } = await reports(ws);
    for (const report of [rest, parallel, steps]) {
      expect(report).toMatchObject({
        verified: false,
        firstBreak: { sequence: signed.treeSize, reason: 'checkpoint_signature_invalid' },
        checkpoint: { holds: false },
      });
    }
  });

  it('leaves a break of the chain itself, before the signed size, as the first break', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 5);
    await integrate(app, ws);
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(
        sql`update ledger_events set payload_text = '{"title":"changed"}' where workspace_id = ${ws.workspaceId} and sequence = 3`,
      );
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    });
    const report = await verifyWorkspace(app.runtime.db, ws.workspaceId);
    expect(report).toMatchObject({
      verified: false,
      firstBreak: { sequence: 3, reason: 'payload_digest_mismatch' },
      checkpoint: { holds: null },
    });
  });
});

describe('projections:rebuild and the tree', () => {
  it('rebuilds the tree from the events and clears its alarm; the integrator signs the rebuilt tree', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 7);
    await integrate(app, ws);
    const before = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    // A fork: the newest events cut, others written; the integrator stops on alarm.
    await cutTo(ws, before.treeSize - 3);
    await writeWork(app, ws, 5);
    expect(await integrateWorkspace(app.runtime.db, ws.workspaceId, signingSettings(app))).toMatchObject({ outcome: 'alarm' });

    const [report] = await rebuildProjections(app.runtime.db, ws.workspaceId);
    const size = before.treeSize + 2;
    expect(report!.tree).toEqual({
      size,
      root: await rootOver(ws, size),
      previousSize: before.treeSize,
      clearedAlarm: expect.stringMatching(/is not the one the tree holds/),
    });
    expect(await workspacesToIntegrate(app.runtime.db)).toContain(ws.workspaceId);
    expect(await integrateWorkspace(app.runtime.db, ws.workspaceId, signingSettings(app))).toMatchObject({ outcome: 'signed', size });
    expect(await workspacesToIntegrate(app.runtime.db)).not.toContain(ws.workspaceId);
    const after = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    expect({ size: after.treeSize, root: after.root.toString('base64') }).toEqual({ size, root: report!.tree.root });
    // The old note at its size is kept beside it: a fork, on record.
    const kept = await query<{ tree_size: string | number }>(
      app.runtime.db,
      sql`select tree_size from ledger_checkpoints where workspace_id = ${ws.workspaceId} and tree_size = ${before.treeSize}`,
    );
    expect(kept).toHaveLength(1);
    // The rebuilt tiles prove inclusion against the new root.
    const plan = inclusionPlan(1, size);
    const path = hashesOf(plan, await readNodes(app.runtime.db, ws.workspaceId, plan.nodes));
    const [leaf] = await query<{ event_hash: string }>(
      app.runtime.db,
      sql`select event_hash from ledger_events where workspace_id = ${ws.workspaceId} and sequence = 2`,
    );
    expect(verifyInclusion(1, size, eventLeafHash(leaf!.event_hash), path, after.root)).toBe(true);
    // The log signed its new history: the database alone now agrees (a witness that kept the old one does not).
    expect(await verifyWorkspace(app.runtime.db, ws.workspaceId)).toMatchObject({
      verified: true,
      checkpoint: { treeSize: size, holds: true },
    });
  });

  it('after a rebuild of unchanged events, finds the same root already signed and signs nothing new', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 4);
    await integrate(app, ws);
    const before = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    const [report] = await rebuildProjections(app.runtime.db, ws.workspaceId);
    expect(report!.tree).toMatchObject({ size: before.treeSize, root: before.root.toString('base64'), clearedAlarm: null });
    expect(await workspacesToIntegrate(app.runtime.db)).not.toContain(ws.workspaceId);
    expect(await integrateWorkspace(app.runtime.db, ws.workspaceId, signingSettings(app))).toMatchObject({ outcome: 'current' });
  });
});
