/** The API keys of a workspace, newest first, revoked ones too (owners); never a secret. */
import { z } from 'zod';
import { desc, eq } from 'drizzle-orm';
import { apiKeys } from '@/db/schema';
import { humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

export const listProcedure = humanOwnerProcedure.input(z.strictObject({ workspace_id: id() })).query(async ({ ctx, actor }) => {
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
    .where(eq(apiKeys.workspaceId, actor.workspaceId))
    .orderBy(desc(apiKeys.createdAt));
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt?.toISOString() ?? null,
    revoked_at: r.revokedAt?.toISOString() ?? null,
  }));
});
