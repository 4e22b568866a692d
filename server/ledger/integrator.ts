/**
 * The integrator: after commits, it adds the new events of each workspace to its Merkle tree
 * (tiles.ts) and signs a checkpoint of the larger tree (checkpoints.ts). It runs beside the
 * writes, never in them: the append gains no statement. One instance at a time runs it (the
 * `ledger-integrator` lease, as the retention job has its own).
 *
 * Before it extends a tree it checks that the events still match it: the event at the tree's
 * size must still be there with the leaf the tree holds, the head must not be behind the tree,
 * and the events after it must follow without a gap. If not (events cut off, rewritten or
 * missing), the tree is put on alarm: an error log line, the `aws_ledger_tree_alarms` metric, and
 * no checkpoint for that workspace until an operator rebuilds the tree (projections:rebuild).
 *
 * Each run takes the workspaces a few events behind together, in one transaction of a few
 * statements for all of them (integrateTogether); the rest (a long backlog, a first key to make,
 * a tree rebuilt and not yet signed, a tree row another transaction holds) get a pass each
 * (integrateWorkspace).
 */
import { eq, sql } from 'drizzle-orm';
import { query, type Database, type Executor, type Tx } from '@/db';
import { ledgerHeads, ledgerTrees } from '@/db/schema';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { signCheckpoint, signedCheckpointRow } from './checkpoints';
import { EMPTY_ROOT, eventLeafHash } from './merkle';
import {
  edgeOf,
  extendTree,
  heldLeaf,
  lastLeafTile,
  readTiles,
  tilesOfEdge,
  writeTiles,
  writeTilesOf,
  type Edge,
  type TileRead,
  type TileWrite,
} from './tiles';
import { INSTANCE_ID, takeLease } from '@/server/job-lease';
import { describeError, log } from '@/server/log';

/** Events added to a tree per transaction at most (a long ledger is integrated in several). */
const BATCH = 10_000;
const LEASE = 'ledger-integrator';

/** What one pass over a workspace did. */
export type Integration =
  | { workspaceId: string; outcome: 'extended'; from: number; to: number; root: Buffer }
  | { workspaceId: string; outcome: 'signed'; size: number; root: Buffer }
  | { workspaceId: string; outcome: 'current' }
  | { workspaceId: string; outcome: 'alarm'; alarm: string };

/** How many workspaces' trees are on alarm (the aws_ledger_tree_alarms metric). */
export async function countTreeAlarms(db: Database): Promise<number> {
  const [row] = await query<{ n: number | string }>(db, sql`select count(*) as n from ledger_trees where alarm is not null`);
  return Number(row?.n ?? 0);
}

/** A workspace the integrator has work for: its tree's size (null before its tree row) and its head. */
interface Behind {
  workspaceId: string;
  size: number | null;
  head: number;
}

/**
 * The workspaces whose tree is behind (or ahead of) their ledger, or whose tree was rebuilt and
 * not yet signed (projections:rebuild builds it in its transaction), and not on alarm.
 */
async function behindWorkspaces(db: Database): Promise<Behind[]> {
  const rows = await query<{ workspace_id: string; size: number | string | null; head: number | string }>(
    db,
    sql`select h.workspace_id, t.size, h.sequence as head from ledger_heads h
          left join ledger_trees t on t.workspace_id = h.workspace_id
         where t.alarm is null
           and (h.sequence <> coalesce(t.size, 0)
                or (t.size > 0 and not exists (select 1 from ledger_checkpoints c
                                                where c.workspace_id = t.workspace_id and c.tree_size = t.size and c.root = t.root)))
         order by h.workspace_id`,
  );
  return rows.map((r) => ({ workspaceId: r.workspace_id, size: r.size === null ? null : Number(r.size), head: Number(r.head) }));
}

/** The ids of the workspaces the integrator has work for, in id order. */
export async function workspacesToIntegrate(db: Database): Promise<string[]> {
  return (await behindWorkspaces(db)).map((w) => w.workspaceId);
}

type EventRow = { sequence: number | string; event_hash: string };
/**
 * The edges of trees as this process last extended them, with each tree's size and root then. The
 * next pass starts from one (extendTree) when the tree is still that one, and reads only the last
 * leaf the tree holds (32 bytes) instead of its edge tiles: building an edge from them is up to
 * 255 hashes per tile level, and the tiles up to 8 KiB each way, every period, for every busy
 * workspace. A tree rebuilt or extended elsewhere no longer matches, and its entry is not used.
 * Bounded: the oldest entry goes first.
 */
const edgesKept = new Map<string, { size: number; root: Buffer; edge: Edge }>();
const MAX_EDGES_KEPT = 10_000;

function keptEdge(workspaceId: string, size: number, root: Buffer): Edge | undefined {
  const kept = edgesKept.get(workspaceId);
  return kept && kept.size === size && kept.root.equals(root) ? kept.edge : undefined;
}

function keepEdge(workspaceId: string, edge: Edge, root: Buffer): void {
  edgesKept.delete(workspaceId);
  if (edgesKept.size >= MAX_EDGES_KEPT) edgesKept.delete(edgesKept.keys().next().value!);
  edgesKept.set(workspaceId, { size: edge.size, root, edge });
}

/** What a pass reads of a tree's tiles: the last leaf it holds, and its edge. */
interface PassTiles {
  held: Buffer | undefined;
  edge: () => Edge;
}

/**
 * Reads, for each tree, what a pass needs of its tiles, in one query for all of them: the last leaf
 * the tree holds, and the tiles of its edge unless this process kept the edge (keptEdge).
 */
async function readPassTiles(
  tx: Executor,
  trees: readonly { workspaceId: string; size: number; root: Buffer }[],
): Promise<Map<string, PassTiles>> {
  const kept = new Map(trees.map((t) => [t.workspaceId, keptEdge(t.workspaceId, t.size, t.root)]));
  // Each tile wanted: whole, or only the last leaf.
  const tiles = await readTiles(
    tx,
    trees.flatMap((t): TileRead[] => {
      if (!kept.get(t.workspaceId)) return tilesOfEdge(t.size).map((ref) => ({ workspaceId: t.workspaceId, ...ref }));
      if (t.size === 0) return [];
      const { level, idx, offset } = lastLeafTile(t.size);
      return [{ workspaceId: t.workspaceId, level, idx, first: offset * 32 + 1, len: 32 }];
    }),
  );
  return new Map(
    trees.map((t): [string, PassTiles] => {
      const tileOf = (level: number, idx: number) => tiles.get(`${t.workspaceId}/${level}/${idx}`);
      const edge = kept.get(t.workspaceId);
      if (!edge) return [t.workspaceId, { held: t.size > 0 ? heldLeaf(t.size, tileOf) : undefined, edge: () => edgeOf(t.size, tileOf) }];
      const held = t.size > 0 ? tileOf(0, lastLeafTile(t.size).idx) : undefined;
      return [t.workspaceId, { held: held?.length === 32 ? held : undefined, edge: () => edge }];
    }),
  );
}

/**
 * Checks the events read for a pass against the tree of `size`: they run from the event at the
 * tree's size (or the first) to `to` without a gap, and the first is the leaf the tree holds.
 * `held` is the tree's last leaf as its tile holds it. Returns the alarm to raise, or null when
 * they match; throws when the tiles lack the leaf.
 */
function mismatchOf(size: number, head: number, to: number, events: readonly EventRow[], held: Buffer | undefined): string | null {
  let expected = Math.max(size, 1);
  for (const event of events) {
    if (Number(event.sequence) !== expected) break;
    expected++;
  }
  if (expected !== to + 1 && to >= Math.max(size, 1))
    return `event ${expected} is missing (the tree holds ${size}, the head is at ${head})`;
  if (size > 0) {
    if (!held) throw new Error(`tree node 0/${size - 1} is not in the tiles`);
    if (!eventLeafHash(events[0]!.event_hash).equals(held)) return `event ${size} is not the one the tree holds`;
  }
  return null;
}

/**
 * One pass over a workspace: up to BATCH new events into its tree and a signed checkpoint, in one
 * transaction. It takes the tree's row, not the ledger's lock: writes go on meanwhile, and the
 * events up to the head it read are committed and never change. `batch` is for tests.
 */
export async function integrateWorkspace(
  db: Database,
  workspaceId: string,
  settings: SigningSettings,
  batch = BATCH,
): Promise<Integration> {
  return db.transaction(async (tx) => {
    // The tree's row, locked, and the head, in one statement; a workspace's first pass makes the row.
    let found = await lockTree(tx, workspaceId);
    if (!found) {
      await tx.insert(ledgerTrees).values({ workspaceId, size: 0, root: EMPTY_ROOT }).onConflictDoNothing();
      found = await lockTree(tx, workspaceId);
    }
    if (!found) throw new Error(`no tree row for workspace ${workspaceId}`);
    const { tree, headSequence } = found;
    if (tree.alarm) return { workspaceId, outcome: 'alarm', alarm: tree.alarm };
    if (headSequence < tree.size) {
      return raiseAlarm(tx, workspaceId, `the ledger's head is at ${headSequence}, but the tree holds ${tree.size} events`);
    }
    // The event at the tree's size (to check it still is the one the tree holds), then the new ones.
    const to = Math.min(headSequence, tree.size + batch);
    const events = await query<EventRow>(
      tx,
      sql`select sequence, event_hash from ledger_events
           where workspace_id = ${workspaceId} and sequence between ${Math.max(tree.size, 1)} and ${to}
           order by sequence`,
    );
    const tiles = (await readPassTiles(tx, [{ workspaceId, size: tree.size, root: tree.root }])).get(workspaceId)!;
    const alarm = mismatchOf(tree.size, headSequence, to, events, tiles.held);
    if (alarm) return raiseAlarm(tx, workspaceId, alarm);
    const fresh = tree.size > 0 ? events.slice(1) : events;
    if (fresh.length === 0) {
      // Nothing new, but a rebuilt tree is signed once (signCheckpoint keeps an identical note once).
      if (tree.size > 0 && !(await isSigned(tx, workspaceId, tree.size, tree.root))) {
        await signCheckpoint(tx, workspaceId, tree.size, tree.root, settings);
        return { workspaceId, outcome: 'signed', size: tree.size, root: tree.root };
      }
      return { workspaceId, outcome: 'current' };
    }
    const edge = tiles.edge();
    const grown = extendTree(
      edge,
      fresh.map((e) => eventLeafHash(e.event_hash)),
    );
    await writeTiles(tx, workspaceId, grown.tiles);
    keepEdge(workspaceId, edge, grown.root);
    const { size, root } = grown;
    await tx.update(ledgerTrees).set({ size, root, updatedAt: new Date() }).where(eq(ledgerTrees.workspaceId, workspaceId));
    await signCheckpoint(tx, workspaceId, size, root, settings);
    return { workspaceId, outcome: 'extended', from: tree.size, to: size, root };
  });
}

/**
 * The workspace's tree row, locked for the pass, and its ledger head's sequence (0 without one).
 * Each statement is a round trip and a write to the socket (about 0.1 ms of this process's CPU
 * here), and every busy workspace has a pass every period: the pass keeps to few.
 */
async function lockTree(tx: Tx, workspaceId: string) {
  const [row] = await tx
    .select({ tree: ledgerTrees, headSequence: ledgerHeads.sequence })
    .from(ledgerTrees)
    .leftJoin(ledgerHeads, eq(ledgerHeads.workspaceId, ledgerTrees.workspaceId))
    .where(eq(ledgerTrees.workspaceId, workspaceId))
    .for('update', { of: ledgerTrees });
  return row && { tree: row.tree, headSequence: Number(row.headSequence ?? 0) };
}

async function isSigned(tx: Tx, workspaceId: string, size: number, root: Buffer): Promise<boolean> {
  const rows = await query(
    tx,
    sql`select 1 from ledger_checkpoints where workspace_id = ${workspaceId} and tree_size = ${size} and root = ${root}`,
  );
  return rows.length > 0;
}

async function raiseAlarm(tx: Tx, workspaceId: string, alarm: string): Promise<Integration> {
  await tx.update(ledgerTrees).set({ alarm, alarmAt: new Date() }).where(eq(ledgerTrees.workspaceId, workspaceId));
  return { workspaceId, outcome: 'alarm', alarm };
}

/**
 * How far behind a workspace may be to go in a pass together with others, and how many events
 * and workspaces one such pass takes at most. A workspace further behind (a backlog, a rebuild)
 * gets passes of its own, BATCH events each.
 */
const TOGETHER_BEHIND = 1_000;
const TOGETHER_EVENTS = 10_000;
const TOGETHER_WORKSPACES = 256;

/**
 * One pass over several workspaces at once: their new events into their trees and a signed
 * checkpoint each, in one transaction of seven statements, whatever their number (a pass of its
 * own is seven per workspace, and at 64 busy workspaces those passes cost the server a third of
 * a millisecond of CPU per request: README, Performance). It takes only the tree rows no other
 * transaction holds (SKIP LOCKED), of workspaces that have a signing key and a few new events.
 * Returns what it did for those it took; the others are left for integrateWorkspace, as is a
 * workspace whose tiles would change (it fails there, alone, and is logged).
 */
export async function integrateTogether(db: Database, ids: readonly string[], settings: SigningSettings): Promise<Integration[]> {
  return db.transaction(async (tx) => {
    const trees = (
      await query<{
        workspace_id: string;
        size: number | string;
        root: Uint8Array;
        head: number | string;
        key_id: string;
        name: string;
        private_key_cipher: string;
      }>(
        tx,
        sql`select t.workspace_id, t.size, t.root, h.sequence as head, k.key_id, k.name, k.private_key_cipher
              from ledger_trees t
              join ledger_heads h on h.workspace_id = t.workspace_id
              join ledger_signing_keys k on k.workspace_id = t.workspace_id and k.retired_at is null
             where t.workspace_id = any(string_to_array(${ids.join(',')}::text, ',')::uuid[])
               and t.alarm is null and h.sequence > t.size and h.sequence - t.size <= ${TOGETHER_BEHIND}
             order by t.workspace_id
               for update of t skip locked`,
      )
    ).map((r) => ({
      workspaceId: r.workspace_id,
      size: Number(r.size),
      root: Buffer.from(r.root),
      head: Number(r.head),
      key: { keyId: r.key_id, name: r.name, privateKeyCipher: r.private_key_cipher },
    }));
    if (trees.length === 0) return [];
    // The event at each tree's size (to check it still is the one the tree holds), then the new ones.
    const events = await query<EventRow & { workspace_id: string }>(
      tx,
      sql`select e.workspace_id, e.sequence, e.event_hash
            from jsonb_to_recordset(${JSON.stringify(trees.map((t) => ({ ws: t.workspaceId, first: Math.max(t.size, 1), last: t.head })))}::jsonb)
                 as w(ws uuid, first bigint, last bigint)
            join ledger_events e on e.workspace_id = w.ws and e.sequence between w.first and w.last
           order by e.workspace_id, e.sequence`,
    );
    const eventsOf = new Map<string, EventRow[]>();
    for (const e of events) (eventsOf.get(e.workspace_id) ?? eventsOf.set(e.workspace_id, []).get(e.workspace_id)!).push(e);
    const tilesOf = await readPassTiles(tx, trees);

    const done: Integration[] = [];
    const grownTrees: { workspaceId: string; from: number; size: number; root: Buffer; key: (typeof trees)[number]['key'] }[] = [];
    const writes: TileWrite[] = [];
    for (const tree of trees) {
      const mine = eventsOf.get(tree.workspaceId) ?? [];
      const tiles = tilesOf.get(tree.workspaceId)!;
      try {
        const alarm = mismatchOf(tree.size, tree.head, tree.head, mine, tiles.held);
        if (alarm) {
          done.push(await raiseAlarm(tx, tree.workspaceId, alarm));
          continue;
        }
        const edge = tiles.edge();
        const grown = extendTree(
          edge,
          (tree.size > 0 ? mine.slice(1) : mine).map((e) => eventLeafHash(e.event_hash)),
        );
        keepEdge(tree.workspaceId, edge, grown.root);
        grownTrees.push({ workspaceId: tree.workspaceId, from: tree.size, size: grown.size, root: grown.root, key: tree.key });
        for (const tile of grown.tiles) writes.push({ workspaceId: tree.workspaceId, ...tile });
      } catch {
        // Tiles that disagree with the tree's record: its own pass says so (and fails) after this one.
      }
    }
    const refused = await writeTilesOf(tx, writes);
    const signed = grownTrees.filter((t) => !refused.has(t.workspaceId));
    if (signed.length > 0) {
      await query(
        tx,
        sql`update ledger_trees t set size = w.size, root = decode(w.root, 'hex'), updated_at = now()
              from jsonb_to_recordset(${JSON.stringify(signed.map((g) => ({ ws: g.workspaceId, size: g.size, root: g.root.toString('hex') })))}::jsonb)
                   as w(ws uuid, size bigint, root text)
             where t.workspace_id = w.ws`,
      );
      const checkpoints = signed.map((g) => signedCheckpointRow(g.workspaceId, g.size, g.root, g.key, settings));
      await query(
        tx,
        sql`insert into ledger_checkpoints (workspace_id, tree_size, root, note, key_id)
            select c."workspaceId", c."treeSize", decode(c.root, 'hex'), c.note, c."keyId"
              from jsonb_to_recordset(${JSON.stringify(checkpoints.map((c) => ({ ...c, root: c.root.toString('hex') })))}::jsonb)
                   as c("workspaceId" uuid, "treeSize" bigint, root text, note text, "keyId" text)
            on conflict do nothing`,
      );
    }
    for (const g of signed) done.push({ workspaceId: g.workspaceId, outcome: 'extended', from: g.from, to: g.size, root: g.root });
    return done;
  });
}

/**
 * The workspaces that may go in a pass together, in groups of at most TOGETHER_EVENTS new events
 * and TOGETHER_WORKSPACES workspaces: those with a tree row, a few new events, and nothing else
 * to do (a tree rebuilt and not yet signed, or ahead of its head, gets a pass of its own).
 */
function togetherGroups(behind: readonly Behind[]): string[][] {
  const groups: string[][] = [];
  let group: string[] = [];
  let events = 0;
  for (const w of behind) {
    if (w.size === null || w.head <= w.size || w.head - w.size > TOGETHER_BEHIND) continue;
    if (group.length === TOGETHER_WORKSPACES || events + (w.head - w.size) > TOGETHER_EVENTS) {
      groups.push(group);
      group = [];
      events = 0;
    }
    group.push(w.workspaceId);
    events += w.head - w.size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/**
 * Passes of their own run at once in one run of the job. One after another, a run over 64 busy
 * workspaces took over a second, so a commit waited up to the period plus that run for its
 * checkpoint (measured: p99 2.3–2.7 s against the 2 s target). Each pass is a few short
 * statements in its own transaction and touches only its workspace's rows, so a few in parallel
 * share the pool (DB_POOL_MAX, 10 by default) with the requests without starving them.
 */
const PASSES_AT_ONCE = 4;

function logAlarm(pass: Integration): void {
  if (pass.outcome === 'alarm')
    log('error', 'ledger tree alarm: the events no longer match the tree; no checkpoint until it is rebuilt', {
      workspaceId: pass.workspaceId,
      alarm: pass.alarm,
    });
}

/**
 * One run of the job, on the instance that holds the lease: the workspaces a few events behind in
 * passes together, then every other workspace whose tree is behind in a pass of its own
 * (PASSES_AT_ONCE at a time). The lease lasts a few periods and is renewed by each run that
 * finds work, so a stopped instance hands the job over within that time. Returns what each pass
 * did, in the order the workspaces were found (by id).
 */
export async function runIntegrator(
  db: Database,
  settings: SigningSettings,
  periodMs: number,
  holder = INSTANCE_ID,
): Promise<Integration[]> {
  // Work first: an idle instance reads, and writes no lease row every period.
  const behind = await behindWorkspaces(db);
  if (behind.length === 0) return [];
  if (!(await takeLease(db, LEASE, Math.max(5 * periodMs, 10_000), holder))) return [];
  const done = new Map<string, Integration>();
  for (const group of togetherGroups(behind)) {
    try {
      for (const pass of await integrateTogether(db, group, settings)) {
        logAlarm(pass);
        done.set(pass.workspaceId, pass);
      }
    } catch (err) {
      // The group's workspaces get passes of their own below.
      log('error', 'ledger integration of several workspaces failed', { workspaces: group.length, error: describeError(err) });
    }
  }
  const alone = behind.filter((w) => !done.has(w.workspaceId)).map((w) => w.workspaceId);
  let next = 0;
  const passes = async () => {
    for (let i = next++; i < alone.length; i = next++) {
      const workspaceId = alone[i]!;
      try {
        const pass = await integrateWorkspace(db, workspaceId, settings);
        logAlarm(pass);
        done.set(workspaceId, pass);
      } catch (err) {
        // One workspace's failure (a tile that would change) must not stop the others'.
        log('error', 'ledger integration failed', { workspaceId, error: describeError(err) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PASSES_AT_ONCE, alone.length) }, passes));
  return behind.flatMap((w) => done.get(w.workspaceId) ?? []);
}
