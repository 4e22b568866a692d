/** Paging a workspace's ledger by cursor: the one pager of GET /events/stream's two paths. */
import { decodeCursor, encodeCursor } from './cursor';

/**
 * One page of a workspace's events after `input.cursor`, for events.list and the transport's fast
 * path (server/api/event-page.ts): `read` gets one row more than the limit, which tells whether
 * another page exists. Null when the cursor was not issued by this service for this workspace.
 */
export async function readEventPage<T extends { sequence: number }>(
  secret: string,
  workspaceId: string,
  input: { cursor?: string; limit: number },
  read: (after: number, limit: number) => Promise<T[]>,
): Promise<{ data: T[]; meta: { apiVersion: '1'; workspaceId: string; nextCursor: string; hasMore: boolean; limit: number } } | null> {
  let after = 0;
  if (input.cursor !== undefined) {
    const position = decodeCursor(secret, workspaceId, input.cursor);
    if (!position) return null;
    after = position.sequence;
  }
  const rows = await read(after, input.limit + 1);
  const hasMore = rows.length > input.limit;
  const data = hasMore ? rows.slice(0, input.limit) : rows;
  const last = data.length > 0 ? data[data.length - 1]!.sequence : after;
  return {
    data,
    meta: { apiVersion: '1', workspaceId, nextCursor: encodeCursor(secret, workspaceId, last), hasMore, limit: input.limit },
  };
}
