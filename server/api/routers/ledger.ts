/**
 * GET /ledger/verify: recompute the workspace's chain and name the first broken link. And for the
 * web interface's /ledger page (every member, not published as REST): browsing events newest
 * first, and the same verification in steps, so the page can show its progress.
 */
import { z } from 'zod';
import { readEventsNewestFirst } from '@/server/ledger/read';
import { GENESIS } from '@/server/ledger/chain';
import { verifyStep, verifyWorkspace } from '@/server/ledger/verify';
import { actorIn, apiKeyProcedure, humanProcedure, router } from '../trpc';
import { apiMeta, EVENT_TYPE_PATTERN_SOURCE, id } from '../schemas';

/** Events a verification step checks: a step takes a few hundred milliseconds at most. */
const VERIFY_STEP_EVENTS = 2000;
const position = z.strictObject({ sequence: z.int().min(0), hash: z.string().max(100) });

const verifyOutput = z
  .object({
    data: z.object({
      ok: z.boolean(),
      checkedEvents: z.int().meta({ description: 'Events whose digests and links were recomputed and found intact.' }),
      lastVerified: z
        .object({ sequence: z.int(), hash: z.string() })
        .meta({ description: 'The last event of the intact part of the chain (sequence 0 and the genesis hash when none is).' }),
      head: z
        .object({ sequence: z.int(), hash: z.string() })
        .meta({ description: 'The head as recorded. Equal to lastVerified when the chain verifies.' }),
      firstBreak: z
        .object({
          sequence: z.int(),
          eventId: z.uuid().nullable(),
          reason: z.enum(['sequence_gap', 'payload_digest_mismatch', 'event_hash_mismatch', 'previous_hash_mismatch', 'head_mismatch']),
          expected: z.string(),
          actual: z.string(),
        })
        .nullable()
        .meta({ description: 'The first link that does not hold, or null when the whole chain verifies.' }),
    }),
    meta: apiMeta,
  })
  .meta({ id: 'LedgerVerification' });

export const ledgerRouter = router({
  verify: apiKeyProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/ledger/verify',
        tags: ['ledger'],
        summary: 'Verify the workspace’s hash chain',
        description:
          'Recomputes every payloadDigest and eventHash (sha256 of RFC 8785 canonical JSON), checks each previousHash ' +
          'and that sequences run 1, 2, 3 … without gaps, and compares the recorded head. Reports the first break.',
      },
    })
    .input(z.strictObject({}))
    .output(verifyOutput)
    .query(async ({ ctx }) => {
      const report = await verifyWorkspace(ctx.runtime.db, ctx.actor.workspaceId);
      return {
        data: report,
        meta: { apiVersion: '1' as const, workspaceId: ctx.actor.workspaceId },
      };
    }),

  browse: humanProcedure
    .input(
      z.strictObject({
        workspace_id: id(),
        at: z.int().min(1).optional(),
        event_type: z.string().regex(new RegExp(EVENT_TYPE_PATTERN_SOURCE)).optional(),
        aggregate_id: id().optional(),
        limit: z.int().min(1).max(100).default(50),
      }),
    )
    .query(async ({ ctx, input }) => {
      actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden' });
      const rows = await readEventsNewestFirst(ctx.runtime.db, input.workspace_id, {
        atOrBefore: input.at,
        eventType: input.event_type,
        aggregateId: input.aggregate_id,
        limit: input.limit + 1,
      });
      const page = rows.slice(0, input.limit);
      return { events: page, olderAt: rows.length > input.limit ? page.at(-1)!.sequence - 1 : null };
    }),

  verifyStep: humanProcedure
    .input(
      z.strictObject({
        workspace_id: id(),
        progress: z.strictObject({ position, checkedEvents: z.int().min(0), head: position.nullable() }).optional(),
      }),
    )
    .query(async ({ ctx, input }) => {
      actorIn(ctx.principal, ctx.trace, input.workspace_id, { outsider: 'forbidden' });
      const progress = input.progress ?? { position: GENESIS, checkedEvents: 0, head: null };
      return verifyStep(ctx.runtime.db, input.workspace_id, progress, VERIFY_STEP_EVENTS);
    }),
});
