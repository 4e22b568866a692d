/**
 * The ledger's Merkle tree and its signed checkpoints (server/ledger/integrator.ts, tiles.ts,
 * checkpoints.ts), on both engines: the integrator extends each workspace's tree from its events,
 * in batches across tile boundaries, to the root RFC 9162 gives over the events' hashes; it signs
 * a C2SP checkpoint with the workspace's key, announced in the ledger; proofs read from the tiles
 * verify; a published tile never changes; and events cut off or rewritten stop the tree (alarm).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { releaseLease } from '@/server/job-lease';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { addSigningKey, newestCheckpoint } from '@/server/ledger/checkpoints';
import { integrateTogether } from '@/server/ledger/integrate-together';
import { countTreeAlarms, integrateWorkspace, runIntegrator, workspacesToIntegrate } from '@/server/ledger/integrator';
import { measureTreeAlarmsWith } from '@/server/metrics';
import { metricValue } from '../support/metrics';
import {
  consistencyPlan,
  eventLeafHash,
  hashesOf,
  inclusionPlan,
  rootOfLeaves,
  verifyConsistency,
  verifyInclusion,
} from '@/server/ledger/merkle';
import { parseCheckpoint, parseVkey, verifyNote, vkeyOf } from '@/server/ledger/note';
import { readNodes, writeTiles } from '@/server/ledger/tiles';
import { startTestApp, type TestApp } from '../support/app';
import { signingSettings, writeWork } from '../support/ledger-tree';

let app: TestApp;
let settings: SigningSettings;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
  settings = signingSettings(app);
});
afterAll(async () => app?.close());

/** The leaf hashes of the workspace's events, in sequence order, straight from the table. */
async function leaves(workspaceId: string): Promise<Buffer[]> {
  const rows = await query<{ event_hash: string }>(
    app.runtime.db,
    sql`select event_hash from ledger_events where workspace_id = ${workspaceId} order by sequence`,
  );
  return rows.map((r) => eventLeafHash(r.event_hash));
}

async function tree(workspaceId: string) {
  const [row] = await query<{ size: number | string; root: Uint8Array; alarm: string | null }>(
    app.runtime.db,
    sql`select size, root, alarm from ledger_trees where workspace_id = ${workspaceId}`,
  );
  return row ? { size: Number(row.size), root: Buffer.from(row.root), alarm: row.alarm } : null;
}

/** The workspace's current key as a verifier key, from its public half. */
async function currentVkey(workspaceId: string): Promise<string> {
  const [row] = await query<{ name: string; public_key: Uint8Array }>(
    app.runtime.db,
    sql`select name, public_key from ledger_signing_keys where workspace_id = ${workspaceId} and retired_at is null`,
  );
  return vkeyOf({ name: row!.name, type: 0x01, publicKey: Buffer.from(row!.public_key) });
}

describe('the ledger tree', () => {
  it('grows to the RFC 9162 root of the events, and signs a C2SP checkpoint with the workspace’s key', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 3);
    expect(await workspacesToIntegrate(app.runtime.db)).toContain(ws.workspaceId);
    const first = await integrateWorkspace(app.runtime.db, ws.workspaceId, settings);
    const before = await leaves(ws.workspaceId);
    expect(first).toMatchObject({ outcome: 'extended', from: 0, to: before.length });
    expect((await tree(ws.workspaceId))!.root.equals(rootOfLeaves(before))).toBe(true);
    expect(await integrateWorkspace(app.runtime.db, ws.workspaceId, settings)).toMatchObject({ outcome: 'current' });
    expect(await workspacesToIntegrate(app.runtime.db)).not.toContain(ws.workspaceId);

    const checkpoint = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    const vkey = await currentVkey(ws.workspaceId);
    expect(verifyNote(checkpoint.note, parseVkey(vkey))).toBe(true);
    const body = parseCheckpoint(checkpoint.note.slice(0, checkpoint.note.indexOf('\n\n') + 1));
    expect(body).toEqual({
      origin: `${new URL(settings.appUrl).host}/workspaces/${ws.workspaceId}`,
      size: before.length,
      root: rootOfLeaves(before),
    });
    expect(vkey.startsWith(`${body.origin}+`)).toBe(true);
  });

  it('announces a rotated key in the ledger, retires the old one, and signs with the new one', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 1);
    await integrateWorkspace(app.runtime.db, ws.workspaceId, settings);
    const old = await currentVkey(ws.workspaceId);
    await app.runtime.db.transaction((tx) => addSigningKey(tx, ws.workspaceId, settings));
    const now = await currentVkey(ws.workspaceId);
    expect(now).not.toBe(old);
    const [event] = await query<{ payload: Record<string, unknown> }>(
      app.runtime.db,
      sql`select coalesce(payload, payload_text::jsonb) as payload from ledger_events where workspace_id = ${ws.workspaceId} and event_type = 'ledger.key_added'`,
    );
    expect(event!.payload).toMatchObject({ vkey: now, replaces: old.split('+')[1], algorithm: 'ed25519' });
    const keys = await query<{ retired: boolean }>(
      app.runtime.db,
      sql`select retired_at is not null as retired from ledger_signing_keys where workspace_id = ${ws.workspaceId} order by created_at`,
    );
    expect(keys.map((k) => k.retired)).toEqual([true, false]);
    expect(await integrateWorkspace(app.runtime.db, ws.workspaceId, settings)).toMatchObject({ outcome: 'extended' });
    const note = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!.note;
    expect(verifyNote(note, parseVkey(now))).toBe(true);
    expect(verifyNote(note, parseVkey(old))).toBe(false);
  });

  it('extends in batches across tile boundaries, and its proofs verify against each root', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 520);
    const roots = new Map<number, Buffer>();
    for (const batch of [1, 6, 249, 1, 255, 300]) {
      const pass = await integrateWorkspace(app.runtime.db, ws.workspaceId, settings, batch);
      if (pass.outcome !== 'extended') break;
      roots.set(pass.to, pass.root);
    }
    while ((await integrateWorkspace(app.runtime.db, ws.workspaceId, settings, 97)).outcome === 'extended');
    const all = await leaves(ws.workspaceId);
    expect(all.length).toBeGreaterThan(512);
    const t = (await tree(ws.workspaceId))!;
    expect(t.size).toBe(all.length);
    expect(t.root.equals(rootOfLeaves(all))).toBe(true);
    for (const [size, root] of roots) expect(root.equals(rootOfLeaves(all.slice(0, size))), `root at ${size}`).toBe(true);

    for (const index of [0, 1, 255, 256, 257, 511, 512, all.length - 1]) {
      const plan = inclusionPlan(index, t.size);
      const path = hashesOf(plan, await readNodes(app.runtime.db, ws.workspaceId, plan.nodes));
      expect(verifyInclusion(index, t.size, all[index]!, path, t.root), `leaf ${index}`).toBe(true);
    }
    for (const [size, root] of roots) {
      const plan = consistencyPlan(size, t.size);
      const proof = hashesOf(plan, await readNodes(app.runtime.db, ws.workspaceId, plan.nodes));
      expect(verifyConsistency(size, t.size, proof, root, t.root), `from ${size}`).toBe(true);
    }
  });

  it('extends several workspaces in one pass, each to its RFC 9162 root, and leaves out those it cannot take', async () => {
    const [across, small, rewritten, refused, fresh] = await Promise.all(Array.from({ length: 5 }, () => app.createWorkspace()));
    for (const ws of [across, small, rewritten, refused]) {
      await writeWork(app, ws!, 3);
      await integrateWorkspace(app.runtime.db, ws!.workspaceId, settings); // its tree row and key
    }
    await writeWork(app, across!, 300); // across the first tile's end: a tile of level 1 is written
    for (const ws of [small, rewritten, refused, fresh]) await writeWork(app, ws!, 2);
    const signedBefore = async (workspaceId: string) => (await newestCheckpoint(app.runtime.db, workspaceId))!;
    const rewrittenAt = (await tree(rewritten!.workspaceId))!;
    const refusedAt = (await tree(refused!.workspaceId))!;
    const refusedSigned = await signedBefore(refused!.workspaceId);
    await app.runtime.db.transaction(async (tx) => {
      // The event at the tree's size is rewritten: the tree no longer holds it (an alarm).
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(
        sql`update ledger_events set event_hash = 'sha256:' || repeat('0', 64) where workspace_id = ${rewritten!.workspaceId} and sequence = ${rewrittenAt.size}`,
      );
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
      // A tile already holds a hash past the tree's size that the next event's leaf would change.
      await tx.execute(
        sql`update ledger_tree_tiles set hashes = hashes || ${Buffer.alloc(32)}::bytea where workspace_id = ${refused!.workspaceId} and level = 0 and idx = 0`,
      );
    });

    const ids = [across, small, rewritten, refused, fresh].map((ws) => ws!.workspaceId);
    const passes = await integrateTogether(app.runtime.db, ids, settings);
    const byId = new Map(passes.map((p) => [p.workspaceId, p]));
    for (const ws of [across, small]) {
      const all = await leaves(ws!.workspaceId);
      expect(byId.get(ws!.workspaceId)).toMatchObject({ outcome: 'extended', to: all.length });
      const t = (await tree(ws!.workspaceId))!;
      expect(t.size).toBe(all.length);
      expect(t.root.equals(rootOfLeaves(all))).toBe(true);
      const checkpoint = await signedBefore(ws!.workspaceId);
      expect(parseCheckpoint(checkpoint.note.slice(0, checkpoint.note.indexOf('\n\n') + 1)).size).toBe(all.length);
      expect(verifyNote(checkpoint.note, parseVkey(await currentVkey(ws!.workspaceId)))).toBe(true);
      const plan = inclusionPlan(all.length - 1, t.size);
      const path = hashesOf(plan, await readNodes(app.runtime.db, ws!.workspaceId, plan.nodes));
      expect(verifyInclusion(all.length - 1, t.size, all.at(-1)!, path, t.root)).toBe(true);
    }
    expect(byId.get(rewritten!.workspaceId)).toMatchObject({
      outcome: 'alarm',
      alarm: expect.stringMatching(/not the one the tree holds/),
    });
    expect((await tree(rewritten!.workspaceId))!.alarm).toMatch(/not the one/);
    // The refused workspace is left as it was, for a pass of its own (which fails, and is logged).
    expect(byId.has(refused!.workspaceId)).toBe(false);
    expect((await tree(refused!.workspaceId))!).toEqual(refusedAt);
    expect((await signedBefore(refused!.workspaceId)).treeSize).toBe(refusedSigned.treeSize);
    await expect(integrateWorkspace(app.runtime.db, refused!.workspaceId, settings)).rejects.toThrow(/would change/);
    // Put back as it was, so that later runs here find nothing they cannot do.
    await query(
      app.runtime.db,
      sql`update ledger_tree_tiles set hashes = substring(hashes from 1 for length(hashes) - 32) where workspace_id = ${refused!.workspaceId} and level = 0 and idx = 0`,
    );
    // A workspace without a tree row or a key yet is left for a pass of its own, which makes them.
    expect(byId.has(fresh!.workspaceId)).toBe(false);
    expect(await tree(fresh!.workspaceId)).toBeNull();
    expect(passes).toHaveLength(3);
  });

  it('never changes a hash already written to a tile', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 1);
    await integrateWorkspace(app.runtime.db, ws.workspaceId, settings);
    const [tile] = await query<{ hashes: Uint8Array }>(
      app.runtime.db,
      sql`select hashes from ledger_tree_tiles where workspace_id = ${ws.workspaceId} and level = 0 and idx = 0`,
    );
    const stored = Buffer.from(tile!.hashes);
    const changed = Buffer.from(stored);
    changed[0]! ^= 1;
    await expect(
      app.runtime.db.transaction((tx) => writeTiles(tx, ws.workspaceId, [{ level: 0, idx: 0, hashes: changed }])),
    ).rejects.toThrow(/would change/);
    // Growing it is what the integrator does.
    await app.runtime.db.transaction((tx) =>
      writeTiles(tx, ws.workspaceId, [{ level: 0, idx: 0, hashes: Buffer.concat([stored, Buffer.alloc(32)]) }]),
    );
    // As the integrator sends it: only the new hashes, after the `start` kept. A write that overlaps
    // what is stored must agree with it, and one past the stored end (a gap) is refused.
    const n = stored.length / 32 + 1;
    const next = Buffer.alloc(32, 7);
    const attempt = (start: number, hashes: Buffer) =>
      app.runtime.db.transaction((tx) => writeTiles(tx, ws.workspaceId, [{ level: 0, idx: 0, start, hashes }]));
    await expect(attempt(n - 1, Buffer.concat([Buffer.alloc(32, 1), next]))).rejects.toThrow(/would change/);
    await expect(attempt(n + 1, next)).rejects.toThrow(/would change/);
    await attempt(n - 1, Buffer.concat([Buffer.alloc(32), next])); // the overlap agrees
    await attempt(n + 1, next);
    const [after] = await query<{ hashes: Uint8Array }>(
      app.runtime.db,
      sql`select hashes from ledger_tree_tiles where workspace_id = ${ws.workspaceId} and level = 0 and idx = 0`,
    );
    expect(Buffer.from(after!.hashes).equals(Buffer.concat([stored, Buffer.alloc(32), next, next]))).toBe(true);
  });

  it('stops on alarm, with no new checkpoint, when the newest events are cut off and the head moved back', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 3);
    while ((await integrateWorkspace(app.runtime.db, ws.workspaceId, settings)).outcome === 'extended');
    const signed = (await newestCheckpoint(app.runtime.db, ws.workspaceId))!;
    // An operator with the database cuts the last two events and rewinds the head to match.
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(sql`alter table ledger_heads disable trigger ledger_heads_forward_only`);
      await tx.execute(sql`delete from ledger_events where workspace_id = ${ws.workspaceId} and sequence > ${signed.treeSize - 2}`);
      await tx.execute(
        sql`update ledger_heads set sequence = ${signed.treeSize - 2},
              head_hash = (select event_hash from ledger_events where workspace_id = ${ws.workspaceId} and sequence = ${signed.treeSize - 2})
            where workspace_id = ${ws.workspaceId}`,
      );
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
      await tx.execute(sql`alter table ledger_heads enable trigger ledger_heads_forward_only`);
    });
    await writeWork(app, ws, 3); // and writes on, so the head passes the signed size again
    const passes = await runIntegrator(app.runtime.db, settings, 1_000);
    expect(passes.find((p) => p.workspaceId === ws.workspaceId)).toMatchObject({
      outcome: 'alarm',
      alarm: expect.stringMatching(/is not the one the tree holds/),
    });
    expect((await tree(ws.workspaceId))!.alarm).toMatch(/not the one/);
    expect(await workspacesToIntegrate(app.runtime.db)).not.toContain(ws.workspaceId);
    expect((await newestCheckpoint(app.runtime.db, ws.workspaceId))!.treeSize).toBe(signed.treeSize);
    measureTreeAlarmsWith(() => countTreeAlarms(app.runtime.db));
    expect(await metricValue('aws_ledger_tree_alarms')).toBe(await countTreeAlarms(app.runtime.db));
    expect(await metricValue('aws_ledger_tree_alarms')).toBeGreaterThanOrEqual(1);
  });

  it('stops on alarm when the head is behind the tree', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 2);
    while ((await integrateWorkspace(app.runtime.db, ws.workspaceId, settings)).outcome === 'extended');
    const size = (await tree(ws.workspaceId))!.size;
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(sql`alter table ledger_heads disable trigger ledger_heads_forward_only`);
      await tx.execute(sql`delete from ledger_events where workspace_id = ${ws.workspaceId} and sequence = ${size}`);
      await tx.execute(sql`update ledger_heads set sequence = ${size - 1} where workspace_id = ${ws.workspaceId}`);
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
      await tx.execute(sql`alter table ledger_heads enable trigger ledger_heads_forward_only`);
    });
    expect(await workspacesToIntegrate(app.runtime.db)).toContain(ws.workspaceId);
    expect(await integrateWorkspace(app.runtime.db, ws.workspaceId, settings)).toMatchObject({
      outcome: 'alarm',
      alarm: expect.stringMatching(/head is at/),
    });
  });

  it('runs on one instance at a time', async () => {
    await releaseLease(app.runtime.db, 'ledger-integrator'); // held by this process's earlier run
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 1);
    const mine = await runIntegrator(app.runtime.db, settings, 1_000, 'instance-a');
    expect(mine.map((p) => p.workspaceId)).toContain(ws.workspaceId);
    await writeWork(app, ws, 1);
    expect(await runIntegrator(app.runtime.db, settings, 1_000, 'instance-b')).toEqual([]);
    expect((await runIntegrator(app.runtime.db, settings, 1_000, 'instance-a')).map((p) => p.workspaceId)).toContain(ws.workspaceId);
    // With nothing to do, a run reads and takes no lease: an idle instance writes nothing every period.
    while ((await runIntegrator(app.runtime.db, settings, 1_000, 'instance-a')).length > 0);
    expect(await workspacesToIntegrate(app.runtime.db)).toEqual([]);
    await releaseLease(app.runtime.db, 'ledger-integrator', 'instance-a');
    expect(await runIntegrator(app.runtime.db, settings, 1_000, 'instance-idle')).toEqual([]);
    const [lease] = await query<{ holder: string }>(app.runtime.db, sql`select holder from job_leases where name = 'ledger-integrator'`);
    expect(lease!.holder).toBe('instance-a');
  });
});
