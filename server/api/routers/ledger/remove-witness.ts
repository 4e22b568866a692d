/** DELETE /ledger/witnesses/{id}: an owner removes a named witness. */
import { z } from 'zod';
import { removeWitness } from '@/server/domain/witnesses/witnesses';
import { apiMeta, id } from '../../schemas';
import { auth, common, witnessProcedure } from './named-witnesses';

export const removeWitnessProcedure = witnessProcedure
  .meta({
    openapi: {
      ...common,
      method: 'DELETE',
      path: '/ledger/witnesses/{id}',
      summary: 'Remove a named witness',
      description:
        'Its cosignatures are refused from now on (403 witness_not_named) and no longer served with any checkpoint; the ' +
        'lines it sent are kept aside, served again if it is named again. Owners and API keys. Recorded as witness.removed.',
    },
    auth,
    errorCodes: ['not_found', 'forbidden'],
  })
  .input(z.strictObject({ id: id() }))
  .output(z.object({ data: z.object({ id: z.uuid(), removed: z.literal(true) }), meta: apiMeta }).meta({ id: 'LedgerWitnessRemoved' }))
  .mutation(({ actor, input, write }) =>
    write(async (tx) => ({
      data: await removeWitness(tx, actor, input.id),
      meta: { apiVersion: '1' as const, workspaceId: actor.workspaceId },
    })),
  );
