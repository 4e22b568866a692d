/** POST /live/dedup/claim: Claim a fingerprint so duplicate triggers fire once (the first claimant wins until expiry or release). */
import { z } from 'zod';
import { claimFingerprint, DEFAULT_TTL_SECONDS } from '@/server/domain/dedup/claims';
import { callerOwnerProcedure } from '../../procedures';
import { id, jsonNumber, mutationHeaders, timestamp } from '../../schemas';
import { authMode, authModeOf, FAIL_CLOSED, fingerprintFields } from './shared';

const claimOutput = z
  .object({
    ok: z.literal(true),
    deduped: z.boolean().meta({ description: 'true when another run already holds the fingerprint.' }),
    claimed: z.boolean().meta({ description: 'true when this request took or extended the claim (and it is durably recorded).' }),
    fingerprint_hash: z.string().regex(/^[0-9a-f]{64}$/),
    active_run_id: z.uuid().meta({ description: 'The run holding the claim.' }),
    expires_at: timestamp(),
    data: authMode,
  })
  .meta({ id: 'DedupClaimResponse' });

export const claimProcedure = callerOwnerProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/live/dedup/claim',
      tags: ['dedup'],
      summary: 'Claim a fingerprint so duplicate triggers fire once',
      description:
        '`fingerprint_hash` = hex sha256 of the canonical JSON `{"event_key","initiative_id"|null,"source"}`, within ' +
        'your workspace. The first claimant wins until `expires_at` or release; the holder re-claiming (same ' +
        '`run_id`) extends it. Both outcomes are 200: `claimed: true` (a `dedup.claimed` or `dedup.extended` ledger ' +
        'event) or `deduped: true` (nothing written). `initiative_id` must be an initiative of your workspace, and ' +
        '`run_id` one of its runs or a holder id an earlier claim generated; any other id (another workspace’s ' +
        'included) is 404 not_found. ' +
        FAIL_CLOSED +
        ' Idempotency-Key is accepted for forward compatibility only.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'not_found', 'lease_expired', 'invalid_idempotency_key'],
  })
  .input(
    z.strictObject({
      ...fingerprintFields,
      ttl_seconds: jsonNumber({ int: true, min: 60, max: 1_209_600 })
        .default(DEFAULT_TTL_SECONDS)
        .meta({ description: 'Claim lifetime in seconds, 60 to 1209600 (14 days); default 21600 (six hours).' }),
      run_id: id().optional().meta({
        description: 'The run asserting the claim: a run of your workspace, or a holder id a claim generated; generated when omitted.',
      }),
    }),
  )
  .output(claimOutput)
  .mutation(({ ctx, input, actor, write }) =>
    write(async (tx) => ({ ok: true as const, ...(await claimFingerprint(tx, actor, input)), data: authModeOf(ctx.principal) })),
  );
