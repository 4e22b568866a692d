/**
 * For the web interface only (not REST: an API key belongs to one workspace): what waits for the
 * signed-in person in every workspace they belong to — a count per workspace, and, when asked,
 * the waiting decisions themselves, each with its workspace. Only the person's own memberships.
 */
import { z } from 'zod';
import { pendingByWorkspace, waitingAcross } from '@/server/domain/decisions/across-workspaces';
import { humanProcedure } from '../../trpc';

export const acrossWorkspacesProcedure = humanProcedure
  .input(z.strictObject({ decisions: z.boolean().default(false) }))
  .query(async ({ ctx, input }) => {
    const { db } = ctx.runtime;
    const ids = ctx.principal.memberships.map((m) => m.workspaceId);
    const [counts, waiting] = await Promise.all([
      pendingByWorkspace(db, ids),
      input.decisions ? waitingAcross(db, ids, { limit: 200 }) : Promise.resolve([]),
    ]);
    return {
      workspaces: counts.map((c) => ({ workspace_id: c.workspaceId, pending: c.pending, blocking: c.blocking })),
      decisions: waiting.map((d) => ({
        id: d.id,
        workspace_id: d.workspaceId,
        workspace_name: d.workspaceName,
        title: d.title,
        urgency: d.urgency,
        blocks_task: d.blocksTask,
        request_count: d.requestCount,
        created_at: d.createdAt.toISOString(),
      })),
    };
  });
