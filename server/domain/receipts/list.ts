/** GET /receipts: a workspace's receipts (those its tasks were given), newest first, by task. */
import { and, desc, eq, type SQL } from 'drizzle-orm';
import type { Executor } from '@/db';
import { receipts } from '@/db/schema';
import { olderThan, type CreatedKey } from '../paging';

export async function listReceipts(db: Executor, workspaceId: string, q: { taskId?: string; after?: CreatedKey; limit: number }) {
  const where: SQL[] = [eq(receipts.workspaceId, workspaceId), olderThan(receipts.createdAt, receipts.id, q.after)];
  if (q.taskId) where.push(eq(receipts.taskId, q.taskId));
  return db
    .select()
    .from(receipts)
    .where(and(...where))
    .orderBy(desc(receipts.createdAt), desc(receipts.id))
    .limit(q.limit);
}
