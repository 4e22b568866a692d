/** GET /ledger/proofs/inclusion: the audit path of one event in a signed tree. */
import { z } from 'zod';
import { inclusionProof } from '@/server/ledger/proofs';
import { agentProcedure } from '../../procedures';
import { apiMeta } from '../../schemas';
import { HASHES, treeIndex, workspaceOf, workspaceQuery } from './shared';

const inclusionOutput = z
  .object({
    data: z.object({
      sequence: z.int(),
      tree_size: z.int(),
      leaf_index: z.int().meta({ description: 'sequence − 1.' }),
      leaf_hash: z.string(),
      inclusion_path: z.array(z.string()).meta({ description: 'RFC 9162 §2.1.3 audit path, leaf side first.' }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'LedgerInclusionProof' });

export const inclusionProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/ledger/proofs/inclusion',
      tags: ['ledger'],
      summary: 'Prove an event is in a signed tree',
      description:
        'The audit path of the event at `sequence` in the tree of `tree_size` events (default: the newest ' +
        'checkpoint’s). Verify it with RFC 9162 §2.1.3.2 against that checkpoint’s root. A size past the newest ' +
        'checkpoint, or a sequence past the size, is 400. ' +
        HASHES,
    },
    errorCodes: ['validation_failed', 'not_found'],
  })
  .input(
    z.strictObject({
      sequence: treeIndex('The event’s sequence.'),
      tree_size: treeIndex('A signed tree size; default the newest checkpoint’s.').optional(),
      workspace_id: workspaceQuery,
    }),
  )
  .output(inclusionOutput)
  .query(async ({ ctx, actor, input }) => {
    const workspaceId = workspaceOf(actor, input.workspace_id);
    return { data: await inclusionProof(ctx.runtime.db, workspaceId, input), meta: { apiVersion: '1' as const, workspaceId } };
  });
