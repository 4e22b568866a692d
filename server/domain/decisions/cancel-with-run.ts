/**
 * A decision raised on a run has no one left to act on its ruling once the run is cancelled: it is
 * cancelled with it, by the system, with its own event (docs/contract.md §4.2: `cancelled` — its run cancelled).
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { decisions, type DecisionResolution } from '@/db/schema';
import type { NewEvent } from '@/server/ledger/append';

/** Cancels the pending decisions of `runIds`; returns their events for the caller to append. */
export async function cancelDecisionsOfRuns(tx: Tx, workspaceId: string, runIds: readonly string[], now: Date): Promise<NewEvent[]> {
  if (runIds.length === 0) return [];
  const resolution = (runId: string): DecisionResolution => ({
    outcome: 'cancelled',
    option_ids: [],
    note: `Cancelled with its run ${runId}.`,
    resolved_by: 'system',
    resolved_by_type: 'system',
    resolved_by_name: null,
    resolved_at: now.toISOString(),
  });
  const pending = await tx
    .select({ id: decisions.id, runId: decisions.runId })
    .from(decisions)
    .where(and(eq(decisions.workspaceId, workspaceId), eq(decisions.status, 'pending'), inArray(decisions.runId, [...runIds])));
  const events: NewEvent[] = [];
  for (const d of pending) {
    const r = resolution(d.runId!);
    const [updated] = await tx
      .update(decisions)
      .set({ status: 'cancelled', resolution: r, updatedAt: now, version: sql`${decisions.version} + 1` })
      .where(and(eq(decisions.id, d.id), eq(decisions.status, 'pending')))
      .returning({ id: decisions.id });
    if (!updated) continue;
    events.push({
      aggregateType: 'decision',
      aggregateId: d.id,
      eventType: 'decision.cancelled',
      payload: { decision_id: d.id, status: 'cancelled', resolution: r },
    });
  }
  return events;
}
