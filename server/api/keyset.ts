/**
 * Newest-first keyset paging by (created_at, id), shared by the lists that page that way (runs,
 * receipts, initiatives): the cursor is the last row's key, signed for its list, workspace and
 * filters (server/ledger/cursor.ts), so a cursor of another listing is 400 invalid_cursor.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { CreatedKey } from '@/server/domain/paging';
import { AppError } from '@/server/errors';
import { decodeKeysetCursor, encodeKeysetCursor } from '@/server/ledger/cursor';
import { apiMeta, id, pageLimit } from './schemas';
import type { ApiContext } from './context';

/** The query parameters every such list takes. */
export const pageParams = {
  workspace_id: id()
    .optional()
    .meta({ description: 'Optional for an API key (its workspace); a signed-in human’s default is their first.' }),
  cursor: z.string().max(512).meta({ description: 'meta.nextCursor of the previous page, with the same filters.' }).optional(),
  limit: pageLimit(),
};

export const pageMeta = apiMeta.extend({ nextCursor: z.string().nullable(), hasMore: z.boolean(), limit: z.int() });

/** The scope a cursor is signed for: list, workspace, and the filters (cursor and limit aside). */
export function listScope(list: string, workspaceId: string, input: Record<string, unknown>): string {
  const { cursor: _c, limit: _l, workspace_id: _w, ...filters } = input;
  const digest = createHash('sha256')
    .update(JSON.stringify(filters, Object.keys(filters).sort()))
    .digest('base64url')
    .slice(0, 16);
  return `${list}|${workspaceId}|${digest}`;
}

export function readCursor(secret: string, scope: string, cursor: string | undefined): CreatedKey | undefined {
  if (cursor === undefined) return undefined;
  const values = decodeKeysetCursor(secret, scope, cursor, 2);
  const createdAt = values ? new Date(values[0]!) : null;
  if (!values || !createdAt || Number.isNaN(createdAt.getTime())) {
    throw new AppError('invalid_cursor', 'This cursor was not issued for this list (workspace and filters).');
  }
  return { createdAt, id: values[1]! };
}

/** The page (limit rows of the limit + 1 read) and its meta. */
export function pageOf<R>(
  rows: R[],
  keyOf: (r: R) => CreatedKey,
  opts: { secret: string; scope: string; limit: number; workspaceId: string },
) {
  const hasMore = rows.length > opts.limit;
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  return {
    page,
    meta: {
      apiVersion: '1' as const,
      workspaceId: opts.workspaceId,
      nextCursor:
        hasMore && last ? encodeKeysetCursor(opts.secret, opts.scope, [keyOf(last).createdAt.toISOString(), keyOf(last).id]) : null,
      hasMore,
      limit: opts.limit,
    },
  };
}

/**
 * The start of a list request in `workspaceId` (the one the role builder found for it: the key's,
 * or the one a human names and belongs to): the cursor's scope, and where the previous page ended.
 */
export function openList(
  ctx: Pick<ApiContext, 'runtime'>,
  workspaceId: string,
  list: string,
  input: Record<string, unknown> & { cursor?: string },
): { scope: string; after: CreatedKey | undefined } {
  const scope = listScope(list, workspaceId, input);
  return { scope, after: readCursor(ctx.runtime.secrets.cursor, scope, input.cursor) };
}
