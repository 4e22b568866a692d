/** Duplicate-trigger claims: the first claimant of a fingerprint wins until expiry or release. */
import { z } from 'zod';
import { claimFingerprint, DEFAULT_TTL_SECONDS, releaseFingerprint } from '@/server/domain/dedup/claims';
import { checkedInTransaction, runMutation } from '../mutation';
import { actorIn, defaultWorkspace, memberProcedure, router } from '../trpc';
import { id, jsonNumber, mutationHeaders, text, timestamp } from '../schemas';

const fingerprintFields = {
  source: text(1, 120).meta({ description: 'The trigger family (a webhook or scheduler name).' }),
  event_key: text(1, 500).meta({ description: 'Stable identity of the event within its source.' }),
  initiative_id: id()
    .optional()
    .meta({ description: 'Optional scope, an initiative of your workspace; without it the claim is workspace-wide.' }),
};

const authMode = z.object({ auth_mode: z.enum(['api_key', 'session']).meta({ description: '`api_key` when authenticated by API key.' }) });

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

const FAIL_CLOSED =
  'The store fails closed: when the claim cannot be durably recorded the answer is 503 service_unavailable with ' +
  'Retry-After, never `claimed: true`.';

export const dedupRouter = router({
  claim: memberProcedure
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
      errorCodes: ['forbidden', 'not_found', 'invalid_idempotency_key'],
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
    .output(checkedInTransaction(claimOutput))
    .mutation(({ ctx, input }) => {
      const actor = actorIn(ctx.principal, ctx.trace, defaultWorkspace(ctx.principal), { outsider: 'forbidden', roles: ['owner'] });
      return runMutation(ctx, actor, { status: 200, output: claimOutput }, async (tx) => ({
        ok: true as const,
        ...(await claimFingerprint(tx, actor, input)),
        data: { auth_mode: ctx.principal.kind === 'api_key' ? ('api_key' as const) : ('session' as const) },
      }));
    }),

  release: memberProcedure
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
    .output(checkedInTransaction(releaseOutput))
    .mutation(({ ctx, input }) => {
      const actor = actorIn(ctx.principal, ctx.trace, defaultWorkspace(ctx.principal), { outsider: 'forbidden', roles: ['owner'] });
      return runMutation(ctx, actor, { status: 200, output: releaseOutput }, async (tx) => ({
        ok: true as const,
        ...(await releaseFingerprint(tx, actor, input)),
        data: { auth_mode: ctx.principal.kind === 'api_key' ? ('api_key' as const) : ('session' as const) },
      }));
    }),
});
