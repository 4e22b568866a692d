/** GET /ledger/witnesses: the witnesses the workspace's owners named. */
import { z } from 'zod';
import { listWitnesses, MAX_WITNESSES_PER_WORKSPACE } from '@/server/domain/witnesses/witnesses';
import { memberProcedure } from '../../procedures';
import { apiMeta, id } from '../../schemas';
import { auth, common, witnessSchema } from './named-witnesses';

export const listWitnessesProcedure = memberProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/ledger/witnesses',
      summary: 'List the named witnesses',
      description:
        'The witnesses whose cosignatures this workspace keeps and serves, in the order they were named. At most ' +
        `${MAX_WITNESSES_PER_WORKSPACE}, so the list is not paged. Every member and API key.`,
    },
    auth,
    errorCodes: ['forbidden'],
  })
  .input(z.strictObject({ workspace_id: id().optional().meta({ description: 'Default: your API key’s workspace.' }) }))
  .output(z.object({ data: z.array(witnessSchema), meta: apiMeta }).meta({ id: 'LedgerWitnessList' }))
  .query(async ({ ctx, actor }) => ({
    data: await listWitnesses(ctx.runtime.db, actor.workspaceId),
    meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId },
  }));
