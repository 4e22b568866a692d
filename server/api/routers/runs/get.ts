/** GET /runs/{runId}: Read a run with its checkpoints. */
import { loadRunView } from '@/server/domain/runs/view';
import { noSuchRun, runPath, runProcedure, runResponse } from './shared';

export const getProcedure = runProcedure()
  .meta({
    openapi: {
      method: 'GET',
      path: '/runs/{runId}',
      tags: ['runs'],
      summary: 'Read a run with its checkpoints',
      description: 'The run (its task, agent, status and state) with its checkpoints. 404 `not_found` for a run of another workspace.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found'],
  })
  .input(runPath)
  .output(runResponse)
  .query(async ({ ctx, input, actor }) => {
    const view = await loadRunView(ctx.runtime.db, actor.workspaceId, input.runId);
    if (!view) throw noSuchRun();
    return { ok: true as const, data: view };
  });
