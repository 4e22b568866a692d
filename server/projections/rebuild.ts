/**
 * Rebuilding the projection tables of a workspace from its ledger alone: empty them, replay every
 * event in sequence order, write the result back. One transaction per workspace, under the
 * workspace's append lock, so no write lands in between. The ledger's Merkle tree is rebuilt
 * in the same pass (its tiles from the events' hashes) and its alarm cleared: the integrator then
 * signs the rebuilt tree (server/ledger/integrator.ts).
 */
import { eq, sql } from 'drizzle-orm';
import type { Database, Tx } from '@/db';
import {
  artifacts,
  decisionAttention,
  decisionGrants,
  decisions,
  dedupClaims,
  importedReceipts,
  initiatives,
  ledgerTrees,
  ledgerTreeTiles,
  ledgerWitnesses,
  toolCalls,
  milestones,
  receipts,
  runCheckpoints,
  runs,
  tasks,
  workspaces,
  workstreams,
} from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { EMPTY_ROOT, eventLeafHash } from '@/server/ledger/merkle';
import { readEvents } from '@/server/ledger/read';
import { growTree } from '@/server/ledger/tiles';
import { emptyState, type ProjectionState } from '@/server/domain/projection';
import { fold } from './state';

const PAGE = 5000;
const CHUNK = 500;

/** Replays the whole ledger of a workspace into a fresh state; `onPage` sees each page of events too. */
export async function replayWorkspace(
  db: Database | Tx,
  workspaceId: string,
  onPage?: (page: LedgerEvent[]) => Promise<void>,
): Promise<{ state: ProjectionState; events: number }> {
  const state = emptyState();
  let after = 0;
  let events = 0;
  for (;;) {
    const page = await readEvents(db, workspaceId, { after, limit: PAGE });
    fold(page, state);
    await onPage?.(page);
    events += page.length;
    if (page.length < PAGE) return { state, events };
    after = page[page.length - 1]!.sequence;
  }
}

async function insertChunks<T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) await insert(rows.slice(i, i + CHUNK));
}

export interface RebuildReport {
  workspaceId: string;
  events: number;
  rows: Record<string, number>;
  /** The ledger's Merkle tree, rebuilt: its size and root (base64), what it held before, and the alarm cleared if any. */
  tree: { size: number; root: string; previousSize: number; clearedAlarm: string | null };
}

/** SQLSTATEs of giving way to a concurrent writer: lock_not_available (our lock_timeout), deadlock_detected. */
const GAVE_WAY = new Set(['55P03', '40P01']);
const ATTEMPTS = 50;

function sqlState(err: unknown): string | undefined {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/**
 * Rebuilds one workspace. Some writers (POST /work, POST /initiatives, new decisions) insert rows,
 * locking their parents, before the append takes the ledger head; the rebuild holds the head while
 * it deletes rows, so it could wait on such a writer while that writer waits on it. It never
 * waits long (lock_timeout) and gives way, retrying from the start, so a writer is never the one
 * aborted.
 */
async function rebuildWorkspace(db: Database, workspaceId: string): Promise<RebuildReport> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await rebuildOnce(db, workspaceId);
    } catch (err) {
      const state = sqlState(err);
      if (!state || !GAVE_WAY.has(state) || attempt >= ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, Math.min(1000, 20 * attempt) * Math.random()));
    }
  }
}

async function rebuildOnce(db: Database, workspaceId: string): Promise<RebuildReport> {
  return db.transaction((tx) => rebuildInTransaction(tx, workspaceId));
}

/** Rebuilds one workspace's work tables in the caller's transaction (a restore's, or rebuildOnce's). */
export async function rebuildInTransaction(tx: Tx, workspaceId: string): Promise<RebuildReport> {
  await tx.execute(sql`set local lock_timeout = '200ms'`);
  // Holding the head row keeps appends out until the rebuilt rows are committed.
  await tx.execute(sql`select 1 from ledger_heads where workspace_id = ${workspaceId} for update`);
  // Children first: the foreign keys point upward.
  await tx.delete(decisionGrants).where(eq(decisionGrants.workspaceId, workspaceId));
  // Artifacts, not their stored bytes (artifact_contents, which no event holds).
  await tx.delete(artifacts).where(eq(artifacts.workspaceId, workspaceId));
  await tx.delete(decisionAttention).where(eq(decisionAttention.workspaceId, workspaceId));
  await tx.delete(decisions).where(eq(decisions.workspaceId, workspaceId));
  await tx.delete(dedupClaims).where(eq(dedupClaims.workspaceId, workspaceId));
  await tx.delete(importedReceipts).where(eq(importedReceipts.workspaceId, workspaceId));
  await tx.delete(runCheckpoints).where(eq(runCheckpoints.workspaceId, workspaceId));
  await tx.delete(runs).where(eq(runs.workspaceId, workspaceId));
  await tx.delete(receipts).where(eq(receipts.workspaceId, workspaceId));
  await tx.delete(tasks).where(eq(tasks.workspaceId, workspaceId));
  await tx.delete(milestones).where(eq(milestones.workspaceId, workspaceId));
  await tx.delete(workstreams).where(eq(workstreams.workspaceId, workspaceId));
  await tx.delete(initiatives).where(eq(initiatives.workspaceId, workspaceId));
  // The named witnesses, not their cosignatures (ledger_cosignatures, which no event holds).
  await tx.delete(ledgerWitnesses).where(eq(ledgerWitnesses.workspaceId, workspaceId));
  await tx.delete(toolCalls).where(eq(toolCalls.workspaceId, workspaceId));
  const [before] = await tx.select().from(ledgerTrees).where(eq(ledgerTrees.workspaceId, workspaceId));
  await tx.delete(ledgerTreeTiles).where(eq(ledgerTreeTiles.workspaceId, workspaceId));

  let tree = { size: 0, root: EMPTY_ROOT };
  const { state, events } = await replayWorkspace(tx, workspaceId, async (page) => {
    if (page.length > 0)
      tree = await growTree(
        tx,
        workspaceId,
        tree.size,
        page.map((e) => eventLeafHash(e.eventHash)),
      );
  });
  // The tree as rebuilt, alarm cleared; signed by the integrator's next pass (never here: signing
  // is the integrator's, under its lease, with the instance's key secret).
  const rebuiltTree = { size: tree.size, root: tree.root, alarm: null, alarmAt: null, updatedAt: new Date() };
  await tx
    .insert(ledgerTrees)
    .values({ workspaceId, ...rebuiltTree })
    .onConflictDoUpdate({ target: ledgerTrees.workspaceId, set: rebuiltTree });
  // Parents first.
  await insertChunks([...state.initiatives.values()], (c) => tx.insert(initiatives).values(c));
  await insertChunks([...state.workstreams.values()], (c) => tx.insert(workstreams).values(c));
  await insertChunks([...state.milestones.values()], (c) => tx.insert(milestones).values(c));
  await insertChunks([...state.tasks.values()], (c) => tx.insert(tasks).values(c));
  await insertChunks([...state.receipts.values()], (c) => tx.insert(receipts).values(c));
  await insertChunks([...state.runs.values()], (c) => tx.insert(runs).values(c));
  await insertChunks([...state.checkpoints.values()], (c) => tx.insert(runCheckpoints).values(c));
  await insertChunks([...state.claims.values()], (c) => tx.insert(dedupClaims).values(c));
  await insertChunks([...state.imported.values()], (c) => tx.insert(importedReceipts).values(c));
  await insertChunks([...state.decisions.values()], (c) => tx.insert(decisions).values(c));
  await insertChunks([...state.attention.values()], (c) => tx.insert(decisionAttention).values(c));
  await insertChunks([...state.grants.values()], (c) => tx.insert(decisionGrants).values(c));
  await insertChunks([...state.artifacts.values()], (c) => tx.insert(artifacts).values(c));
  await insertChunks([...state.witnesses.values()], (c) => tx.insert(ledgerWitnesses).values(c));
  await insertChunks([...state.toolCalls.values()], (c) => tx.insert(toolCalls).values(c));
  return {
    workspaceId,
    events,
    rows: {
      initiatives: state.initiatives.size,
      workstreams: state.workstreams.size,
      milestones: state.milestones.size,
      tasks: state.tasks.size,
      receipts: state.receipts.size,
      runs: state.runs.size,
      checkpoints: state.checkpoints.size,
      claims: state.claims.size,
      imported: state.imported.size,
      decisions: state.decisions.size,
      attention: state.attention.size,
      grants: state.grants.size,
      artifacts: state.artifacts.size,
      witnesses: state.witnesses.size,
      toolCalls: state.toolCalls.size,
    },
    tree: { size: tree.size, root: tree.root.toString('base64'), previousSize: before?.size ?? 0, clearedAlarm: before?.alarm ?? null },
  };
}

/** Rebuilds every workspace (or the one given). */
export async function rebuildProjections(db: Database, workspaceId?: string): Promise<RebuildReport[]> {
  const ids = workspaceId ? [workspaceId] : (await db.select({ id: workspaces.id }).from(workspaces)).map((w) => w.id);
  const reports: RebuildReport[] = [];
  for (const id of ids) reports.push(await rebuildWorkspace(db, id));
  return reports;
}
