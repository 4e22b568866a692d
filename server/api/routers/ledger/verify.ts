/** GET /ledger/verify: recompute the workspace's chain and name the first broken link. */
import { z } from 'zod';
import { published } from '@/server/ledger/chain';
import { verifyWorkspace } from '@/server/ledger/verify';
import { apiKeyProcedure } from '../../trpc';
import { apiMeta } from '../../schemas';

const verifyOutput = z
  .object({
    data: z.object({
      verified: z.boolean().meta({ description: 'The whole chain holds: every digest and link, and the recorded head.' }),
      ok: z.boolean().meta({ deprecated: true, description: 'The same as verified. Deprecated: read verified; it goes in API version 2.' }),
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

export const verifyProcedure = apiKeyProcedure
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
      data: published(report),
      meta: { apiVersion: '1' as const, workspaceId: ctx.actor.workspaceId },
    };
  });
