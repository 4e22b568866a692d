/**
 * A person's decisions waiting in every workspace they belong to: a count per workspace (the header's
 * switcher) and the waiting decisions themselves (the inbox's "All workspaces"), so a blocking
 * decision in one workspace is not lost while another is on screen.
 *
 * The caller passes the workspaces the person belongs to (their memberships as the session reads
 * them now); nothing here widens that list. A decision past its due time counts as no longer
 * waiting even before the timeout sweep has written it (these reads write nothing).
 */
import { and, asc, count, eq, gt, inArray, isNull, or, sql } from 'drizzle-orm';
import type { Executor } from '@/db';
import { decisionAttention, decisions, workspaces, type DecisionUrgency } from '@/db/schema';

export interface WorkspacePending {
  workspaceId: string;
  pending: number;
  /** Of those, the ones a task waits for (blocks_task). */
  blocking: number;
}

export interface WaitingDecision {
  id: string;
  workspaceId: string;
  workspaceName: string;
  title: string;
  urgency: DecisionUrgency;
  blocksTask: boolean;
  createdAt: Date;
  /** How many times an agent asked for attention (0 when it never did). */
  requestCount: number;
}

const waiting = (workspaceIds: readonly string[], now: Date) =>
  and(
    inArray(decisions.workspaceId, [...workspaceIds]),
    eq(decisions.status, 'pending'),
    or(isNull(decisions.dueAt), gt(decisions.dueAt, now)),
  );

/** Pending decisions per workspace, every workspace given (0 for those with none), in the order given. */
export async function pendingByWorkspace(db: Executor, workspaceIds: readonly string[], now = new Date()): Promise<WorkspacePending[]> {
  if (workspaceIds.length === 0) return [];
  const rows = await db
    .select({
      workspaceId: decisions.workspaceId,
      pending: count(),
      blocking: sql<number>`count(*) filter (where ${decisions.blocksTask})`.mapWith(Number),
    })
    .from(decisions)
    .where(waiting(workspaceIds, now))
    .groupBy(decisions.workspaceId);
  const byId = new Map(rows.map((r) => [r.workspaceId, r]));
  return workspaceIds.map((id) => ({
    workspaceId: id,
    pending: Number(byId.get(id)?.pending ?? 0),
    blocking: byId.get(id)?.blocking ?? 0,
  }));
}

const URGENCY_RANK = sql`case ${decisions.urgency} when 'critical' then 0 when 'urgent' then 1 when 'standard' then 2 else 3 end`;

/** The pending decisions of the given workspaces as the inbox orders them: most urgent, then longest waiting. */
export async function waitingAcross(
  db: Executor,
  workspaceIds: readonly string[],
  opts: { limit: number; now?: Date },
): Promise<WaitingDecision[]> {
  if (workspaceIds.length === 0) return [];
  const rows = await db
    .select({
      id: decisions.id,
      workspaceId: decisions.workspaceId,
      workspaceName: workspaces.name,
      title: decisions.title,
      urgency: decisions.urgency,
      blocksTask: decisions.blocksTask,
      createdAt: decisions.createdAt,
      requestCount: decisionAttention.requestCount,
    })
    .from(decisions)
    .innerJoin(workspaces, eq(workspaces.id, decisions.workspaceId))
    .leftJoin(decisionAttention, eq(decisionAttention.decisionId, decisions.id))
    .where(waiting(workspaceIds, opts.now ?? new Date()))
    .orderBy(URGENCY_RANK, asc(decisions.createdAt), asc(decisions.id))
    .limit(opts.limit);
  return rows.map((r) => ({ ...r, requestCount: r.requestCount ?? 0 }));
}
