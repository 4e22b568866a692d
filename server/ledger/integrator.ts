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
import { query, type Database, type Tx } from '@/db';
import { ledgerHeads, ledgerTrees } from '@/db/schema';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { signCheckpoint } from './checkpoints';
import { integrateTogether, togetherGroups } from './integrate-together';
import { EMPTY_ROOT, eventLeafHash } from './merkle';
import { extendTree, writeTiles } from './tiles';
import { keepEdge, mismatchOf, raiseAlarm, readPassTiles, type Behind, type EventRow, type Integration } from './tree-pass';
import { INSTANCE_ID, takeLease } from '@/server/job-lease';
import { describeError, log } from '@/server/log';

/** Events added to a tree per transaction at most (a long ledger is integrated in several). */
const BATCH = 10_000;
const LEASE = 'ledger-integrator';

/** How many workspaces' trees are on alarm (the aws_ledger_tree_alarms metric). */
export async function countTreeAlarms(db: Database): Promise<number> {
  const [row] = await query<{ n: number | string }>(db, sql`select count(*) as n from ledger_trees where alarm is not null`);
  return Number(row?.n ?? 0);
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
