/** GET /ledger/proofs/consistency: proof that a signed tree extends an earlier one. */
import { z } from 'zod';
import { consistencyProof } from '@/server/ledger/proofs';
import { agentProcedure } from '../../procedures';
import { apiMeta } from '../../schemas';
import { HASHES, treeIndex, workspaceOf, workspaceQuery } from './shared';

const consistencyOutput = z
  .object({
    data: z.object({
      from: z.int(),
      to: z.int(),
      consistency_path: z.array(z.string()).meta({ description: 'RFC 9162 §2.1.4 consistency proof (empty when from = to).' }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'LedgerConsistencyProof' });

export const consistencyProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/ledger/proofs/consistency',
      tags: ['ledger'],
      summary: 'Prove a signed tree extends an earlier one',
      description:
        'The proof that the tree of `to` events (default: the newest checkpoint’s) holds the tree of `from` events ' +
        'unchanged as its beginning. Verify it with RFC 9162 §2.1.4.2 against the two checkpoints’ roots: this is what ' +
        'catches a log that cut off or rewrote events it had signed. `to` past the newest checkpoint, or `from` past ' +
        '`to`, is 400. ' +
        HASHES,
    },
    errorCodes: ['validation_failed', 'not_found'],
  })
  .input(
    z.strictObject({
      from: treeIndex('The earlier tree size (one you hold a checkpoint of).'),
      to: treeIndex('The later tree size; default the newest checkpoint’s.').optional(),
      workspace_id: workspaceQuery,
    }),
  )
  .output(consistencyOutput)
  .query(async ({ ctx, actor, input }) => {
    const workspaceId = workspaceOf(actor, input.workspace_id);
    return { data: await consistencyProof(ctx.runtime.db, workspaceId, input), meta: { apiVersion: '1' as const, workspaceId } };
  });
