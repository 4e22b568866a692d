/**
 * The projection tables as one in-memory state (server/domain/projection.ts), built either by
 * replaying the ledger through the aggregates' rules (`fold`, server/domain/events.ts) or by
 * reading the tables (`loadFromTables`). The two must always agree: that is what "the tables are
 * projections of the ledger" means, and the test suite checks it. The operating map is computed
 * from the folded state, and `projections:rebuild` writes it back into emptied tables.
 */
import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import {
  artifacts,
  decisionAttention,
  decisionGrants,
  decisions,
  dedupClaims,
  importedReceipts,
  runCheckpoints,
  initiatives,
  ledgerEvents,
  ledgerWitnesses,
  toolCalls,
  milestones,
  receipts,
  runs,
  tasks,
  workstreams,
} from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { applyEvent } from '@/server/domain/events';
import { emptyState, type ProjectionState } from '@/server/domain/projection';

/** Replays events (in sequence order) into a state. */
export function fold(events: Iterable<LedgerEvent>, state = emptyState()): ProjectionState {
  for (const event of events) applyEvent(state, event);
  return state;
}

/** The projection tables of one workspace, read as they are. */
export async function loadFromTables(db: Executor, workspaceId: string): Promise<ProjectionState> {
  const byId = <R extends { id: string }>(rows: R[]) => new Map(rows.map((r) => [r.id, r]));
  const [i, w, m, t, r, ru, d, a, cp, cl, im, g, ar, wi, tc] = await Promise.all([
    db.select().from(initiatives).where(eq(initiatives.workspaceId, workspaceId)),
    db.select().from(workstreams).where(eq(workstreams.workspaceId, workspaceId)),
    db.select().from(milestones).where(eq(milestones.workspaceId, workspaceId)),
    db.select().from(tasks).where(eq(tasks.workspaceId, workspaceId)),
    db.select().from(receipts).where(eq(receipts.workspaceId, workspaceId)),
    db.select().from(runs).where(eq(runs.workspaceId, workspaceId)),
    db.select().from(decisions).where(eq(decisions.workspaceId, workspaceId)),
    db.select().from(decisionAttention).where(eq(decisionAttention.workspaceId, workspaceId)),
    db.select().from(runCheckpoints).where(eq(runCheckpoints.workspaceId, workspaceId)),
    db.select().from(dedupClaims).where(eq(dedupClaims.workspaceId, workspaceId)),
    db.select().from(importedReceipts).where(eq(importedReceipts.workspaceId, workspaceId)),
    db.select().from(decisionGrants).where(eq(decisionGrants.workspaceId, workspaceId)),
    db.select().from(artifacts).where(eq(artifacts.workspaceId, workspaceId)),
    db.select().from(ledgerWitnesses).where(eq(ledgerWitnesses.workspaceId, workspaceId)),
    db.select().from(toolCalls).where(eq(toolCalls.workspaceId, workspaceId)),
  ]);
  const state: ProjectionState = {
    initiatives: byId(i),
    workstreams: byId(w),
    milestones: byId(m),
    tasks: byId(t),
    receipts: byId(r),
    runs: byId(ru),
    checkpoints: byId(cp),
    claims: byId(cl),
    imported: new Map(im.map((x) => [x.receiptId, x])),
    decisions: byId(d),
    attention: new Map(a.map((x) => [x.decisionId, x])),
    grants: byId(g),
    artifacts: byId(ar),
    witnesses: byId(wi),
    toolCalls: byId(tc),
    receiptEvents: new Map(),
  };
  // Evidence names the event that recorded each receipt; the tables keep receipts, the ledger keeps hashes.
  const taskIds = [...new Set(r.map((x) => x.taskId))];
  for (let start = 0; start < taskIds.length; start += 1000) {
    const chunk = taskIds.slice(start, start + 1000);
    const rows = await db
      .select({ id: ledgerEvents.id, hash: ledgerEvents.eventHash, sequence: ledgerEvents.sequence, taskId: ledgerEvents.aggregateId })
      .from(ledgerEvents)
      .where(
        and(
          eq(ledgerEvents.workspaceId, workspaceId),
          eq(ledgerEvents.eventType, 'work.created'),
          inArray(ledgerEvents.aggregateId, chunk),
        ),
      )
      .orderBy(asc(ledgerEvents.sequence));
    const byTask = new Map(rows.map((x) => [x.taskId, x]));
    for (const receipt of r) {
      const e = byTask.get(receipt.taskId);
      if (e) state.receiptEvents.set(receipt.id, { eventId: e.id, eventHash: e.hash, sequence: e.sequence });
    }
  }
  return state;
}
