/** GET /runs: List runs. */
import { z } from 'zod';
import { runStatuses } from '@/db/schema';
import { runView } from '@/server/domain/runs/view';
import { listRuns } from '@/server/domain/runs/list';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { id, text } from '../../schemas';
import { runSchema } from './shared';

const runSummary = runSchema
  .omit({ checkpoints: true })
  .extend({ checkpoint_count: z.int().meta({ description: 'Checkpoints recorded (GET /runs/{runId} lists them).' }) })
  .meta({ id: 'RunSummary' });

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/runs',
      tags: ['runs'],
      summary: 'List runs',
      description: 'The workspace’s runs, newest first, filtered by task, status (repeatable) and agent, paged by cursor.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(
    z.strictObject({
      task_id: id().optional(),
      status: z.array(z.enum(runStatuses)).max(6).optional().meta({ description: 'Repeatable.' }),
      agent_id: text(1, 200).optional(),
      ...pageParams,
    }),
  )
  .output(z.object({ data: z.array(runSummary), meta: pageMeta }).meta({ id: 'RunPage' }))
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'runs', input);
    const { db, secrets } = ctx.runtime;
    const rows = await listRuns(db, workspaceId, {
      taskId: input.task_id,
      status: input.status,
      agentId: input.agent_id,
      after,
      limit: input.limit + 1,
    });
    const { page, meta } = pageOf(rows, (r) => r.run, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return {
      data: page.map(({ run, checkpoints }) => {
        const { checkpoints: _none, ...view } = runView(run, []);
        return { ...view, checkpoint_count: checkpoints };
      }),
      meta,
    };
  });
