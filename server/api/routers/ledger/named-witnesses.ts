/**
 * What POST/GET/DELETE /ledger/witnesses share: a named witness as the API shows it, and the
 * builder of the procedure that acts on one. Owners name and remove witnesses (and API keys, which
 * act for an owner, as for webhooks and decision policies); every member reads the list.
 */
import { z } from 'zod';
import { ledgerWitnesses } from '@/db/schema';
import { AppError } from '@/server/errors';
import { MAX_WITNESS_NAME } from '@/server/ledger/cosignatures';
import { resourceProcedure } from '../../procedures';
import { OWNERS } from '../../trpc';
import { timestamp } from '../../schemas';

export const witnessSchema = z
  .object({
    id: z.uuid(),
    name: z.string().meta({ description: `The witness key’s name (at most ${MAX_WITNESS_NAME} characters): its cosignature lines’ name.` }),
    key_id: z
      .string()
      .regex(/^[0-9a-f]{8}$/)
      .meta({ description: 'First 4 bytes of SHA-256(name ‖ "\\n" ‖ 0x04 ‖ public key), hex.' }),
    vkey: z.string().meta({ description: 'Its verifier key: `<name>+<key_id>+<base64(0x04 ‖ public key)>`.' }),
    named_at: timestamp(),
  })
  .meta({ id: 'LedgerWitness' });

export const common = { tags: ['ledger'] };
export const auth: ('ApiKey' | 'Session')[] = ['ApiKey', 'Session'];

const noSuchWitness = () => new AppError('not_found', 'No such witness in your workspace.');

/** Acting on the named witness the input's `id` names, as an owner of its workspace; 404 for anyone outside it. */
export const witnessProcedure = resourceProcedure(ledgerWitnesses, 'id', noSuchWitness, OWNERS);
