/** Listing decisions: newest first with keyset paging (the API), and the human inbox ordering. */
import { and, asc, count, desc, eq, inArray, lt, or, sql } from 'drizzle-orm';
import type { Executor } from '@/db';
import { decisions, type DecisionStatus, type DecisionUrgency } from '@/db/schema';
import type { DecisionRow } from './view';

export interface ListFilter {
  status?: DecisionStatus[];
  urgency?: DecisionUrgency[];
}

function filters(workspaceId: string, f: ListFilter) {
  const conditions = [eq(decisions.workspaceId, workspaceId)];
  if (f.status?.length) conditions.push(inArray(decisions.status, f.status));
  if (f.urgency?.length) conditions.push(inArray(decisions.urgency, f.urgency));
  return conditions;
}

/** Newest first; `after` is the (created_at, id) of the last row of the previous page. */
export async function listDecisions(
  db: Executor,
  workspaceId: string,
  f: ListFilter & { after?: { createdAt: Date; id: string }; limit: number },
): Promise<DecisionRow[]> {
  const conditions = filters(workspaceId, f);
  if (f.after) {
    const { createdAt, id } = f.after;
    conditions.push(or(lt(decisions.createdAt, createdAt), and(eq(decisions.createdAt, createdAt), lt(decisions.id, id)))!);
  }
  return db
    .select()
    .from(decisions)
    .where(and(...conditions))
    .orderBy(desc(decisions.createdAt), desc(decisions.id))
    .limit(f.limit);
}

const URGENCY_RANK = sql`case ${decisions.urgency} when 'critical' then 0 when 'urgent' then 1 when 'standard' then 2 else 3 end`;

/** The inbox: pending first, most urgent first, longest waiting first; then the rest, newest first. */
export async function inboxDecisions(db: Executor, workspaceId: string, f: ListFilter & { limit: number }): Promise<DecisionRow[]> {
  return db
    .select()
    .from(decisions)
    .where(and(...filters(workspaceId, f)))
    .orderBy(
      sql`case when ${decisions.status} = 'pending' then 0 else 1 end`,
      sql`case when ${decisions.status} = 'pending' then ${URGENCY_RANK} else 0 end`,
      sql`case when ${decisions.status} = 'pending' then ${decisions.createdAt} end asc`,
      desc(decisions.updatedAt),
      asc(decisions.id),
    )
    .limit(f.limit);
}

export interface InboxCounts {
  byStatus: Record<DecisionStatus, number>;
  pendingByUrgency: Record<DecisionUrgency, number>;
}

export async function inboxCounts(db: Executor, workspaceId: string): Promise<InboxCounts> {
  const rows = await db
    .select({ status: decisions.status, urgency: decisions.urgency, n: count() })
    .from(decisions)
    .where(eq(decisions.workspaceId, workspaceId))
    .groupBy(decisions.status, decisions.urgency);
  const byStatus: InboxCounts['byStatus'] = { pending: 0, approved: 0, declined: 0, cancelled: 0, expired: 0 };
  const pendingByUrgency: InboxCounts['pendingByUrgency'] = { critical: 0, urgent: 0, standard: 0, deferred: 0 };
  for (const r of rows) {
    byStatus[r.status] += Number(r.n);
    if (r.status === 'pending') pendingByUrgency[r.urgency] += Number(r.n);
  }
  return { byStatus, pendingByUrgency };
}
