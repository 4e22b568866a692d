/** GET /artifacts: List artifacts. */
import { z } from 'zod';
import { readCatalog } from '@/server/domain/artifact-types/catalog';
import { listArtifacts } from '@/server/domain/artifacts/artifacts';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { memberProcedure } from '../../procedures';
import { id, text } from '../../schemas';
import { artifactSchema } from './shared';
import { artifactView } from '@/server/domain/artifacts/view';

export const listProcedure = memberProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/artifacts',
      tags: ['artifacts'],
      summary: 'List artifacts',
      description:
        'The workspace’s artifacts, newest first, filtered by task, run and type, paged by cursor. `deliverable=true` keeps ' +
        'the types the catalog marks `is_deliverable` (`false`, those it does not).',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(
    z.strictObject({
      task_id: id().optional(),
      run_id: id().optional(),
      artifact_type: text(1, 100).optional(),
      deliverable: z.stringbool().optional().meta({ description: 'true: only deliverable types; false: only the others.' }),
      ...pageParams,
    }),
  )
  .output(z.object({ data: z.array(artifactSchema), meta: pageMeta }).meta({ id: 'ArtifactPage' }))
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'artifacts', input);
    const { db, secrets } = ctx.runtime;
    let deliverableTypes: string[] | undefined;
    if (input.deliverable !== undefined) {
      deliverableTypes = (await readCatalog(db)).types.filter((t) => t.is_deliverable === input.deliverable).map((t) => t.type_code);
    }
    const rows = await listArtifacts(db, workspaceId, {
      taskId: input.task_id,
      runId: input.run_id,
      artifactType: input.artifact_type,
      deliverableTypes,
      after,
      limit: input.limit + 1,
    });
    const { page, meta } = pageOf(rows, (r) => r, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return { data: page.map(artifactView), meta };
  });
