/**
 * Acting on one resource by id: its workspace is read first, then the caller must belong to it
 * (with one of `roles`, for humans). Anyone outside gets the very 404 a missing id gets, so an id
 * of another workspace cannot be told from one that does not exist (OWASP API1).
 */
import { eq } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { MembershipRole } from '@/db/schema';
import type { Actor, Trace } from '@/server/domain/actor';
import type { AppError } from '@/server/errors';
import { actorIn, type ApiContext, type Principal } from './trpc';

/** A table of workspace-owned rows with a uuid `id`. */
type Owned = PgTable & { id: AnyPgColumn; workspaceId: AnyPgColumn };

export async function actorFor(
  ctx: ApiContext & { principal: Principal; trace: Trace },
  table: Owned,
  id: string,
  missing: () => AppError,
  roles?: readonly MembershipRole[],
): Promise<Actor> {
  const [row] = await ctx.runtime.db
    .select({ workspaceId: table.workspaceId })
    .from(table as PgTable)
    .where(eq(table.id, id));
  if (!row) throw missing();
  return actorIn(ctx.principal, ctx.trace, row.workspaceId as string, { outsider: missing, roles });
}
