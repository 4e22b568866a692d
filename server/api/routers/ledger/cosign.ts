/** POST /ledger/cosignatures: a witness hands back a checkpoint with its cosignature. */
import { z } from 'zod';
import { addCosignature } from '@/server/ledger/cosignatures';
import { agentProcedure } from '../../procedures';
import { apiMeta, mutationHeaders, timestamp } from '../../schemas';

const cosignOutput = z
  .object({
    data: z.object({
      tree_size: z.int(),
      witness: z.string(),
      key_id: z.string(),
      signed_at: timestamp(),
      recorded: z.boolean().meta({
        description:
          'false when nothing changed: this very cosignature, or a newer one by the witness of that tree size, was already kept.',
      }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'LedgerCosignature' });

export const cosignProcedure = agentProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/ledger/cosignatures',
      tags: ['ledger'],
      summary: 'Hand back a witness’s cosignature of a checkpoint',
      description:
        'A witness that checked a checkpoint (its signature, and its consistency with the last one it saw) sends the ' +
        'note back with its C2SP tlog-cosignature line, and its verifier key (type 0x04). The witness must be one the ' +
        'workspace’s owners named (POST /ledger/witnesses; 403 witness_not_named otherwise), the cosignature must verify ' +
        'with its key, vouch for a checkpoint this workspace signed, word for word, and carry a time at most 10 minutes ' +
        'ahead of the service’s clock (400 otherwise). It is then served with the checkpoint: one per witness and tree ' +
        'size, a newer one replacing the one kept. It is kept beside the ledger, not in it: an attestation about the ' +
        'ledger, not a change of work.',
      requestHeaders: mutationHeaders,
    },
    errorCodes: ['validation_failed', 'witness_not_named', 'not_found', 'conflict', 'invalid_idempotency_key'],
  })
  .input(
    z.strictObject({
      note: z.string().min(1).max(16_384).meta({ description: 'The checkpoint note with the witness’s cosignature line.' }),
      witness_vkey: z
        .string()
        .min(1)
        .max(1_024)
        .meta({ description: 'The witness’s verifier key: `<name>+<key id>+<base64(0x04 ‖ public key)>`.' }),
    }),
  )
  .output(cosignOutput)
  .mutation(({ actor, input, write }) =>
    write(async (tx) => ({
      data: await addCosignature(tx, actor, input),
      meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId },
    })),
  );
