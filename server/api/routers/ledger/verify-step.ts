/**
 * The web interface's /ledger page (every member, not published as REST): the verification of
 * GET /ledger/verify in steps, so the page can show its progress.
 */
import { z } from 'zod';
import { GENESIS } from '@/server/ledger/chain';
import { verifyStep } from '@/server/ledger/verify';
import { humanMemberProcedure } from '../../procedures';
import { id } from '../../schemas';

/** Events a verification step checks: a step takes a few hundred milliseconds at most. */
const VERIFY_STEP_EVENTS = 2000;
const position = z.strictObject({ sequence: z.int().min(0), hash: z.string().max(100) });

export const verifyStepProcedure = humanMemberProcedure
  .input(
    z.strictObject({
      workspace_id: id(),
      progress: z
        .strictObject({
          position,
          checkedEvents: z.int().min(0),
          head: position.nullable(),
          signed: z
            .strictObject({
              treeSize: z.int().min(1),
              rootHash: z.base64().length(44),
              // The subtrees of the tree verified so far: one per bit of its size.
              tree: z.array(z.base64().length(44)).max(53),
            })
            .nullable()
            .optional(),
        })
        .optional(),
    }),
  )
  .query(async ({ ctx, input, actor }) => {
    const progress = input.progress ?? { position: GENESIS, checkedEvents: 0, head: null };
    return verifyStep(ctx.runtime.db, actor.workspaceId, progress, VERIFY_STEP_EVENTS);
  });
