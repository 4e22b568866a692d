/** GET /ledger/verify: recompute the workspace's chain and name the first broken link. */
import { z } from 'zod';
import { BREAK_REASONS, published } from '@/server/ledger/chain';
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
          reason: z.enum(BREAK_REASONS).meta({
            description:
              'What does not hold. The checkpoint_ reasons compare the chain with the newest signed checkpoint: its signature ' +
              'does not verify (checkpoint_signature_invalid), the chain ends before the size it signed (checkpoint_beyond_head: ' +
              'events were cut), or the Merkle root of the chain’s first tree_size events is not the signed root (checkpoint_root_mismatch).',
          }),
          expected: z.string(),
          actual: z.string(),
        })
        .nullable()
        .meta({ description: 'The first link that does not hold, or null when the whole chain verifies.' }),
      checkpoint: z
        .object({
          treeSize: z.int().meta({ description: 'The tree size the log signed.' }),
          rootHash: z.string().meta({ description: 'The signed Merkle root (standard base64, as in the note).' }),
          keyId: z.string().meta({ description: 'The signing key (8 hex digits), as GET /ledger/keys lists it.' }),
          holds: z.boolean().nullable().meta({
            description:
              'The chain reaches the signed size with the signed root, and the signature verifies; null when a break before that size left it unjudged.',
          }),
        })
        .nullable()
        .meta({
          description:
            'The newest signed checkpoint (GET /ledger/checkpoint), which the chain was checked against; null before the first. ' +
            'A log that rebuilt its tree and signed again passes this check: a witness that kept an earlier checkpoint is what catches it.',
        }),
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
        'and that sequences run 1, 2, 3 … without gaps, and compares the recorded head. Then checks the chain against the newest ' +
        'signed checkpoint: its signature, that the chain reaches its tree size, and that the Merkle root (RFC 9162) of the ' +
        'first tree_size events is the signed root. Reports the first break.',
    },
  })
  .input(z.strictObject({}))
  .output(verifyOutput)
  .query(async ({ ctx }) => {
    const report = await verifyWorkspace(ctx.runtime.db, ctx.actor.workspaceId);
    return {
      data: published({ ...report, checkpoint: report.checkpoint ?? null }),
      meta: { apiVersion: '1' as const, workspaceId: ctx.actor.workspaceId },
    };
  });
