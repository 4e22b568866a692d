/** POST /live/dedup/release: Release a claimed fingerprint early. */
import { z } from 'zod';
import { releaseFingerprint } from '@/server/domain/dedup/claims';
import { callerOwnerProcedure } from '../../procedures';
import { id, mutationHeaders, timestamp } from '../../schemas';
import { authMode, authModeOf, FAIL_CLOSED, fingerprintFields } from './shared';

const releaseOutput = z
  .object({
    ok: z.literal(true),
    released: z.boolean().meta({ description: 'true when this run held the claim and freed it.' }),
    fingerprint_hash: z.string().regex(/^[0-9a-f]{64}$/),
    active_run_id: z.uuid().nullable().meta({ description: 'The run still holding the claim (null when free).' }),
    expires_at: timestamp().nullable(),
    data: authMode,
  })
  .meta({ id: 'DedupReleaseResponse' });

export const releaseProcedure = callerOwnerProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/live/dedup/release',
      tags: ['dedup'],
      summary: 'Release a claimed fingerprint early',
      description:
        'Frees the fingerprint when `run_id` holds it (`released: true`, a `dedup.released` ledger event); for any ' +
        'other run, or a claim already free, `released: false` and nothing is written. ' +
        FAIL_CLOSED,
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'not_found', 'invalid_idempotency_key'],
  })
  .input(z.strictObject({ ...fingerprintFields, run_id: id().meta({ description: 'The run that holds the claim.' }) }))
  .output(releaseOutput)
  .mutation(({ ctx, input, actor, write }) =>
    write(async (tx) => ({ ok: true as const, ...(await releaseFingerprint(tx, actor, input)), data: authModeOf(ctx.principal) })),
  );
