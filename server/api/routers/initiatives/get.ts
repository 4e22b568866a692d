/** GET /initiatives/{initiativeId}: Read an initiative, optionally with its tree. */
import { initiatives } from '@/db/schema';
import { findInitiative, initiativeView, loadTree } from '@/server/domain/initiatives/tree-view';
import { actorFor } from '../../locate';
import { memberProcedure } from '../../trpc';
import { noSuchInitiative, getInput, getOutput, readWorkspace, parseIncludes } from './shared';

export const getProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/initiatives/{initiativeId}',
      tags: ['initiatives'],
      summary: 'Read an initiative, optionally with its tree',
      description: '`include=tree` adds the tree. `include=launches` lists launches; none are recorded yet, so it is [] with a note.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'not_found'],
  })
  .input(getInput)
  .output(getOutput)
  .query(async ({ ctx, input }) => {
    const include = parseIncludes(input.include);
    const { db } = ctx.runtime;
    let workspaceId: string;
    if (input.workspace_id !== undefined || ctx.principal.kind === 'api_key') {
      workspaceId = readWorkspace(ctx, input.workspace_id);
    } else {
      // A human without a named workspace: the initiative's own, if they belong to it.
      workspaceId = (await actorFor(ctx, initiatives, input.initiativeId, noSuchInitiative)).workspaceId;
    }
    const initiative = await findInitiative(db, workspaceId, input.initiativeId);
    if (!initiative) throw noSuchInitiative();
    const notes: string[] = [];
    if (include.has('launches')) notes.push('launches: launches are not recorded yet; this list is empty.');
    return {
      data: {
        initiative: initiativeView(initiative),
        ...(include.has('tree') ? { tree: await loadTree(db, workspaceId, initiative.id) } : {}),
        ...(include.has('launches') ? { launches: [] } : {}),
      },
      meta: { apiVersion: '1' as const, workspaceId, projectionStatus: 'live_rows' as const, ...(notes.length ? { notes } : {}) },
    };
  });
