/** GET /workspace: the caller's workspace, and for an API key the key itself (never the key's secret). */
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import { apiKeys, workspaces } from '@/db/schema';
import { AppError } from '@/server/errors';
import { memberProcedure } from '../../procedures';
import { apiMeta, id, timestamp } from '../../schemas';

const workspaceOutput = z
  .object({
    data: z.object({
      id: z.uuid(),
      name: z.string(),
      created_at: timestamp(),
      api_key: z
        .object({ id: z.uuid(), name: z.string(), prefix: z.string() })
        .nullable()
        .meta({ description: 'The API key the request was made with; null for a signed-in human.' }),
      role: z
        .enum(['owner', 'approver', 'viewer'])
        .nullable()
        .meta({ description: 'A signed-in human’s role in the workspace; null for an API key.' }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'Workspace' });

export const getProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/workspace',
      tags: ['workspace'],
      summary: 'The caller’s workspace',
      description:
        'The workspace an API key belongs to, with the key’s id, name and prefix (never the key): what an agent ' +
        'checks at start to know where it acts. A signed-in human names one of their workspaces with ' +
        '`workspace_id` (default: their first), and sees their role in it.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden'],
  })
  .input(z.strictObject({ workspace_id: id().optional() }))
  .output(workspaceOutput)
  .query(async ({ ctx, actor }) => {
    const { workspaceId } = actor;
    const { db } = ctx.runtime;
    const [ws] = await db.select().from(workspaces).where(eq(workspaces.id, workspaceId));
    if (!ws) throw new AppError('not_found', 'No such workspace.');
    let apiKey: { id: string; name: string; prefix: string } | null = null;
    if (ctx.principal.kind === 'api_key') {
      const [key] = await db
        .select({ id: apiKeys.id, name: apiKeys.name, prefix: apiKeys.prefix })
        .from(apiKeys)
        .where(eq(apiKeys.id, ctx.principal.keyId));
      apiKey = key ?? null;
    }
    return {
      data: { id: ws.id, name: ws.name, created_at: ws.createdAt.toISOString(), api_key: apiKey, role: actor.role ?? null },
      meta: { apiVersion: '1' as const, workspaceId },
    };
  });
