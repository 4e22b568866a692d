/**
 * For the web interface (/settings/account): the signed-in member's delegation while away in a
 * workspace, the members it may go to, and setting and ending it.
 */
import { z } from 'zod';
import { and, eq, inArray, ne } from 'drizzle-orm';
import { memberships, users } from '@/db/schema';
import { RULING_ROLES } from '@/server/domain/decisions/policy';
import { endAway, readAway, setAway } from '@/server/domain/workspaces/delegation';
import { humanMemberProcedure } from '../../procedures';
import { id } from '../../schemas';

export const awayProcedure = humanMemberProcedure.input(z.strictObject({ workspace_id: id() })).query(async ({ ctx, actor }) => {
  const { db } = ctx.runtime;
  const candidates = await db
    .select({ user_id: users.id, name: users.displayName })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(
      and(eq(memberships.workspaceId, actor.workspaceId), inArray(memberships.role, [...RULING_ROLES]), ne(memberships.userId, actor.id)),
    )
    .orderBy(users.displayName);
  return { away: await readAway(db, actor.workspaceId, actor.id), candidates };
});

const awaySchema = z.object({ until: z.string(), delegate: z.object({ user_id: z.uuid(), name: z.string() }) });

export const setAwayProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id(), until: z.iso.datetime({ offset: true }), delegate_id: id() }))
  .output(awaySchema)
  .mutation(({ ctx, actor, input }) =>
    ctx.runtime.db.transaction((tx) => setAway(tx, actor, { until: new Date(input.until), delegateId: input.delegate_id })),
  );

export const endAwayProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id() }))
  .output(z.object({ away: z.null() }))
  .mutation(async ({ ctx, actor }) => {
    await ctx.runtime.db.transaction((tx) => endAway(tx, actor));
    return { away: null };
  });
