/** Newest-first keyset paging by (created_at, id), for the services that list (the cursor itself is the transport's). */
import { sql, type SQL, type SQLWrapper } from 'drizzle-orm';

export interface CreatedKey {
  createdAt: Date;
  id: string;
}

/** Rows strictly after `after` in newest-first order (all rows without it). */
export function olderThan(createdAt: SQLWrapper, id: SQLWrapper, after: CreatedKey | undefined): SQL {
  return after ? sql`(${createdAt}, ${id}) < (${after.createdAt.toISOString()}::timestamptz, ${after.id}::uuid)` : sql`true`;
}
