/** GET /initiatives/{initiativeId}: Read an initiative, optionally with its tree. */
import { z } from 'zod';
import { initiatives } from '@/db/schema';
import { findInitiative, initiativeView, loadTree } from '@/server/domain/initiatives/tree-view';
import { AppError } from '@/server/errors';
import { actorFor, namedWorkspace } from '../../locate';
import { acting } from '../../procedures';
import { authenticatedProcedure, type AuthedContext } from '../../trpc';
import { id } from '../../schemas';
import { initiativeMeta, initiativeSchema, treeSchema } from './schemas';

const noSuchInitiative = () => new AppError('not_found', 'No such initiative in your workspace.');

const INCLUDES = ['tree', 'launches'] as const;

const getInput = z.strictObject({
  initiativeId: id(),
  workspace_id: id().optional().meta({ description: 'Optional for a workspace-bound API key; another workspace’s is 403.' }),
  include: z
    .string()
    .max(100)
    .optional()
    .meta({ description: 'Comma-separated: `tree` (workstreams, milestones, tasks, edges, agents, estimates), `launches`.' }),
});

const getOutput = z
  .object({
    data: z.object({
      initiative: initiativeSchema,
      tree: treeSchema.optional(),
      launches: z.array(z.record(z.string(), z.unknown())).optional(),
    }),
    meta: initiativeMeta,
  })
  .meta({ id: 'InitiativeResponse' });

function parseIncludes(raw: string | undefined): Set<(typeof INCLUDES)[number]> {
  const out = new Set<(typeof INCLUDES)[number]>();
  if (raw === undefined || raw.trim() === '') return out;
  for (const part of raw.split(',').map((p) => p.trim())) {
    const known = INCLUDES.find((i) => i === part);
    if (!known) {
      throw new AppError('validation_failed', `include: unknown value ${JSON.stringify(part)}; use tree, launches.`, {
        issues: [{ path: 'include', message: `unknown value ${JSON.stringify(part)} (allowed: tree, launches)` }],
      });
    }
    out.add(known);
  }
  return out;
}

/**
 * What to include (a 400 for an unknown value comes before any workspace is looked at), and the
 * workspace: the one named, or an API key's; a human who names none reads the initiative's own,
 * when they belong to it (404 otherwise, as for an id that does not exist).
 */
async function initiativeWorkspace(ctx: AuthedContext, input: { initiativeId: string; workspace_id?: string; include?: string }) {
  const include = parseIncludes(input.include);
  const { actor } =
    input.workspace_id !== undefined || ctx.principal.kind === 'api_key'
      ? namedWorkspace()(ctx, input)
      : { actor: await actorFor(ctx, initiatives, input.initiativeId, noSuchInitiative) };
  return { actor, include };
}

export const getProcedure = acting(authenticatedProcedure, initiativeWorkspace)
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
  .query(async ({ ctx, input, actor, include }) => {
    const { db } = ctx.runtime;
    const { workspaceId } = actor;
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
