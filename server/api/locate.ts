/**
 * Who acts, and in which workspace: the rules the role builders (procedures.ts) apply to a
 * procedure's input once it is read. A workspace named in the input (or the caller's default) is
 * refused to outsiders with 403. A resource named by id is read first, then the caller must belong
 * to its workspace (with one of `roles`, for humans); anyone outside gets the very 404 a missing id
 * gets, so an id of another workspace cannot be told from one that does not exist (OWASP API1).
 */
import { eq } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { MembershipRole } from '@/db/schema';
import type { Actor } from '@/server/domain/actor';
import type { AppError } from '@/server/errors';
import { actorIn, defaultWorkspace, type AuthedContext } from './trpc';

/** A table of workspace-owned rows with a uuid `id`. */
type Owned = PgTable & { id: AnyPgColumn; workspaceId: AnyPgColumn };

type Roles = readonly MembershipRole[] | undefined;

/** The actor acting on row `id` of `table`; `missing()` when there is none, or it is another workspace's. */
export async function actorFor(ctx: AuthedContext, table: Owned, id: string, missing: () => AppError, roles?: Roles): Promise<Actor> {
  const [row] = await ctx.runtime.db
    .select({ workspaceId: table.workspaceId })
    .from(table as PgTable)
    .where(eq(table.id, id));
  if (!row) throw missing();
  return actorIn(ctx.principal, ctx.trace, row.workspaceId as string, { outsider: missing, roles });
}

/** The workspace the input names (`workspace_id`), else the caller's default one. */
export const namedWorkspace =
  (roles?: Roles) =>
  (ctx: AuthedContext, input: { workspace_id?: string }): { actor: Actor } => {
    const workspaceId = input.workspace_id ?? defaultWorkspace(ctx.principal);
    return { actor: actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden', roles }) };
  };

/** The caller's own workspace (an API key's; a human's first), for operations that name none. */
export const callerWorkspace =
  (roles?: Roles) =>
  (ctx: AuthedContext): { actor: Actor } => ({
    actor: actorIn(ctx.principal, ctx.trace, defaultWorkspace(ctx.principal), { outsider: 'forbidden', roles }),
  });

/** The workspace of the row of `table` whose id is the input's `key`. */
export const ofResource =
  <K extends string>(table: Owned, key: K, missing: () => AppError, roles?: Roles) =>
  async (ctx: AuthedContext, input: Record<K, string>): Promise<{ actor: Actor }> => ({
    actor: await actorFor(ctx, table, input[key], missing, roles),
  });

/**
 * As ofResource, with the whole row (`row`), read in the same query: a decision's ruling needs its
 * status and due time, and reading them again would cost a second query.
 */
export const withRow =
  <T extends Owned, K extends string>(table: T, key: K, missing: () => AppError, roles?: Roles) =>
  async (ctx: AuthedContext, input: Record<K, string>): Promise<{ actor: Actor; row: T['$inferSelect'] }> => {
    const [row] = (await ctx.runtime.db
      .select()
      .from(table as PgTable)
      .where(eq(table.id, input[key]))) as T['$inferSelect'][];
    if (!row) throw missing();
    return { actor: actorIn(ctx.principal, ctx.trace, row.workspaceId as string, { outsider: missing, roles }), row };
  };
