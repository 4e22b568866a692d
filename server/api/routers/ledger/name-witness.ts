/** POST /ledger/witnesses: an owner names a witness, whose cosignatures are kept and served from then on. */
import { z } from 'zod';
import { MAX_WITNESSES_PER_WORKSPACE, nameWitness } from '@/server/domain/witnesses/witnesses';
import { ownerProcedure } from '../../procedures';
import { apiMeta, id, mutationHeaders } from '../../schemas';
import { auth, common, witnessSchema } from './named-witnesses';

export const nameWitnessProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/ledger/witnesses',
      summary: 'Name a witness of the workspace’s ledger',
      description:
        'Only a named witness’s cosignatures (POST /ledger/cosignatures) are kept and served with the checkpoints. Send ' +
        'its verifier key (`npm run ledger:witness` prints it); its name is the key’s own, at most 128 characters, and ' +
        'the key an Ed25519 cosignature key (type 0x04). `name`, when sent, must be that name. The same key named twice ' +
        `is 409 conflict (naming is not idempotent: the answer names the witness already there); a workspace names at most ` +
        `${MAX_WITNESSES_PER_WORKSPACE}. Owners and API keys. Recorded as witness.named.`,
      requestHeaders: mutationHeaders,
    },
    auth,
    successStatus: 201,
    errorCodes: ['forbidden', 'conflict', 'invalid_idempotency_key'],
  })
  .input(
    z.strictObject({
      workspace_id: id().optional().meta({ description: 'Default: your API key’s workspace.' }),
      vkey: z
        .string()
        .min(1)
        .max(1_024)
        .meta({ description: 'The witness’s verifier key: `<name>+<key id>+<base64(0x04 ‖ public key)>`.' }),
      name: z.string().min(1).max(1_024).optional().meta({ description: 'The vkey’s name, as a check (optional).' }),
    }),
  )
  .output(z.object({ data: witnessSchema, meta: apiMeta }).meta({ id: 'LedgerWitnessNamed' }))
  .mutation(({ actor, input, write }) =>
    write(async (tx) => ({
      data: await nameWitness(tx, actor, { vkey: input.vkey, name: input.name }),
      meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId },
    })),
  );
