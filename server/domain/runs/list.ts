/** GET /runs: a workspace's runs, newest first, filtered, with their checkpoints counted. */
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '@/db';
import { runs, type runStatuses } from '@/db/schema';
import { olderThan, type CreatedKey } from '../paging';
import type { RunRow } from '../hierarchy/records';

export async function listRuns(
  db: Executor,
  workspaceId: string,
  q: { taskId?: string; status?: (typeof runStatuses)[number][]; agentId?: string; after?: CreatedKey; limit: number },
): Promise<{ run: RunRow; checkpoints: number }[]> {
  const where: SQL[] = [eq(runs.workspaceId, workspaceId), olderThan(runs.createdAt, runs.id, q.after)];
  if (q.taskId) where.push(eq(runs.taskId, q.taskId));
  if (q.status?.length) where.push(inArray(runs.status, q.status));
  if (q.agentId !== undefined) where.push(eq(runs.agentId, q.agentId));
  const rows = await db
    .select({ run: runs, checkpoints: sql<number>`(select count(*)::int from run_checkpoints c where c.run_id = "runs"."id")` })
    .from(runs)
    .where(and(...where))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(q.limit);
  return rows.map((r) => ({ run: r.run, checkpoints: Number(r.checkpoints) }));
}
