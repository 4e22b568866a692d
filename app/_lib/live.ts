/**
 * What the live pages start from: the workspace's pending decisions (for the tab title) and the
 * ledger position the page was drawn at (where its event stream starts, so it hears only what
 * happens after).
 */
import 'server-only';
import { and, count, eq } from 'drizzle-orm';
import { decisions } from '@/db/schema';
import { encodeCursor } from '@/server/ledger/cursor';
import { readHead } from '@/server/ledger/read';
import { getRuntime } from '@/server/runtime';

export interface LiveState {
  pending: number;
  cursor: string;
}

export async function liveState(workspaceId: string): Promise<LiveState> {
  const { db, secrets } = await getRuntime();
  const [pending, head] = await Promise.all([
    db
      .select({ n: count() })
      .from(decisions)
      .where(and(eq(decisions.workspaceId, workspaceId), eq(decisions.status, 'pending'))),
    readHead(db, workspaceId),
  ]);
  return { pending: pending[0]?.n ?? 0, cursor: encodeCursor(secrets.cursor, workspaceId, head?.sequence ?? 0) };
}
