/** GET /initiatives: a workspace's initiatives, newest first, each with its tasks counted by status. */
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '@/db';
import { initiatives, tasks, taskStatuses } from '@/db/schema';
import type { InitiativeRow } from '../hierarchy/records';
import { olderThan, type CreatedKey } from '../paging';

export type TaskCounts = Record<(typeof taskStatuses)[number], number>;

export async function listInitiatives(
  db: Executor,
  workspaceId: string,
  q: { after?: CreatedKey; limit: number },
): Promise<{ initiative: InitiativeRow; counts: TaskCounts }[]> {
  const rows = await db
    .select()
    .from(initiatives)
    .where(and(eq(initiatives.workspaceId, workspaceId), olderThan(initiatives.createdAt, initiatives.id, q.after)))
    .orderBy(desc(initiatives.createdAt), desc(initiatives.id))
    .limit(q.limit);
  const counted = rows.length
    ? await db
        .select({ initiativeId: tasks.initiativeId, status: tasks.status, n: sql<number>`count(*)::int` })
        .from(tasks)
        .where(
          inArray(
            tasks.initiativeId,
            rows.map((r) => r.id),
          ),
        )
        .groupBy(tasks.initiativeId, tasks.status)
    : [];
  return rows.map((initiative) => {
    const counts = Object.fromEntries(taskStatuses.map((s) => [s, 0])) as TaskCounts;
    for (const c of counted) if (c.initiativeId === initiative.id) counts[c.status] = Number(c.n);
    return { initiative, counts };
  });
}
