/**
 * For the web interface: the passkey challenge of an approval about to be made, over the statement
 * of exactly that approval (the option, the action as it would be approved, the approver). The page
 * hands its options to the browser's authenticator and sends the answer with the approval.
 */
import { z } from 'zod';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { ruledBy } from '@/server/domain/decisions/read-ruling';
import { RULING_ROLES } from '@/server/domain/decisions/policy';
import { relyingParty } from '@/server/domain/passkeys/relying-party';
import { rulingChallenge } from '@/server/domain/passkeys/ruling';
import { AppError } from '@/server/errors';
import { text } from '../../schemas';
import { webauthnOptions } from '../account/passkeys';
import { actionArguments } from './schemas';
import { rulingFields, rulingProcedure } from './ruling';

export const passkeyChallengeProcedure = rulingProcedure(RULING_ROLES)
  .input(
    z.strictObject({
      id: rulingFields.id,
      option_ids: z.array(text(1, 120)).max(20).optional(),
      arguments: actionArguments().optional(),
    }),
  )
  .output(
    z.object({
      challenge_id: z.uuid(),
      statement: z.record(z.string(), z.unknown()),
      options: webauthnOptions<PublicKeyCredentialRequestOptionsJSON>(),
    }),
  )
  .mutation(({ ctx, input, actor, row }) => {
    if (row.status !== 'pending')
      throw new AppError('decision_not_pending', `The decision is already ${row.status}.`, { status: row.status });
    const ruled = ruledBy(row, actor.id, input);
    return ctx.runtime.db.transaction(async (tx) => {
      const { challenge_id, statement, options } = await rulingChallenge(tx, actor, ruled, relyingParty(ctx.runtime.env.APP_URL));
      return { challenge_id, statement: { ...statement }, options };
    });
  });
