/** API keys of a workspace, for its owners in the web interface (not published as REST). */
import { z } from 'zod';
import { desc, eq } from 'drizzle-orm';
import { apiKeys } from '@/db/schema';
import { createApiKey, revokeApiKey } from '@/server/domain/api-keys/api-keys';
import { assertOwnerNow } from '@/server/domain/workspaces/members';
import { runMutation } from '../mutation';
import { actorIn, humanProcedure, router } from '../trpc';
import { id, text } from '../schemas';

const OWNERS = ['owner'] as const;

export const apiKeysRouter = router({
  list: humanProcedure.input(z.strictObject({ workspace_id: id() })).query(async ({ ctx, input }) => {
    actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    const rows = await ctx.runtime.db
      .select({
        id: apiKeys.id,
        name: apiKeys.name,
        prefix: apiKeys.prefix,
        createdAt: apiKeys.createdAt,
        lastUsedAt: apiKeys.lastUsedAt,
        revokedAt: apiKeys.revokedAt,
      })
      .from(apiKeys)
      .where(eq(apiKeys.workspaceId, input.workspace_id))
      .orderBy(desc(apiKeys.createdAt));
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      prefix: r.prefix,
      created_at: r.createdAt.toISOString(),
      last_used_at: r.lastUsedAt?.toISOString() ?? null,
      revoked_at: r.revokedAt?.toISOString() ?? null,
    }));
  }),

  /** Creates a key owned by the signed-in owner; the secret is in this response only. */
  create: humanProcedure.input(z.strictObject({ workspace_id: id(), name: text(1, 100) })).mutation(({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    return runMutation(ctx, actor, { status: 200, output: z.any() }, async (tx) => {
      await assertOwnerNow(tx, actor.workspaceId, actor.id);
      return createApiKey(tx, actor, { name: input.name, ownerUserId: actor.id });
    });
  }),

  revoke: humanProcedure.input(z.strictObject({ workspace_id: id(), key_id: id() })).mutation(({ ctx, input }) => {
    const actor = actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden', roles: OWNERS });
    return runMutation(ctx, actor, { status: 200, output: z.any() }, (tx) => revokeApiKey(tx, actor, { keyId: input.key_id }));
  }),
});
