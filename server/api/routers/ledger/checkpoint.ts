/** GET /ledger/checkpoint: the newest signed checkpoint, with the witnesses' cosignatures. */
import { z } from 'zod';
import { currentCheckpoint } from '@/server/ledger/proofs';
import { agentProcedure } from '../../procedures';
import { apiMeta, timestamp } from '../../schemas';
import { HASHES, workspaceOf, workspaceQuery } from './shared';

const checkpointOutput = z
  .object({
    data: z.object({
      origin: z.string().meta({ description: 'The checkpoint origin: `<APP_URL host>/workspaces/<id>`.' }),
      tree_size: z.int().meta({ description: 'Events in the signed tree: sequences 1 to tree_size.' }),
      root_hash: z.string().meta({ description: 'The RFC 9162 root of those events, base64.' }),
      note: z.string().meta({
        description:
          'The C2SP signed note: the checkpoint (origin, tree size, root, each a line), a blank line, the workspace ' +
          'key’s signature line, then every witness’s cosignature line.',
      }),
      cosignatures: z
        .array(
          z.object({
            witness: z.string(),
            key_id: z.string(),
            vkey: z.string().meta({ description: 'The witness key the cosignature was verified with when it was received.' }),
            signed_at: timestamp().meta({ description: 'The time in the cosignature: when the witness signed.' }),
            received_at: timestamp(),
          }),
        )
        .meta({ description: 'The witnesses that vouched for this checkpoint (their lines are in note).' }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'LedgerCheckpoint' });

export const checkpointProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'GET',
      path: '/ledger/checkpoint',
      tags: ['ledger'],
      summary: 'Read the newest signed checkpoint',
      description:
        'A checkpoint is signed at most CHECKPOINT_INTERVAL_MS (default 1 s) after a commit. Keep it: a later ' +
        'checkpoint must extend it (GET /ledger/proofs/consistency), which is what a witness checks. 404 before the ' +
        'first. ' +
        HASHES,
    },
    errorCodes: ['not_found'],
  })
  .input(z.strictObject({ workspace_id: workspaceQuery }))
  .output(checkpointOutput)
  .query(async ({ ctx, actor, input }) => {
    const workspaceId = workspaceOf(actor, input.workspace_id);
    return { data: await currentCheckpoint(ctx.runtime.db, workspaceId), meta: { apiVersion: '1' as const, workspaceId } };
  });
