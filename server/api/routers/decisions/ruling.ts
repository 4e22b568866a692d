/**
 * A human ruling on a decision — approve, decline, cancel: the same steps with their outcome. The
 * decision's overdue timeout is settled first (a decision that has expired is not pending any more),
 * then the ruling and the decision as it now is are one write: the view is of the row the ruling
 * left, not read again.
 */
import type { z } from 'zod';
import type { MembershipRole } from '@/db/schema';
import { ruleOnDecision, type RulingInput } from '@/server/domain/decisions/rule';
import { decisionViews, type DecisionRow } from '@/server/domain/decisions/view';
import type { Actor } from '@/server/domain/actor';
import { signingOf } from '@/server/runtime';
import type { PasskeyAnswer } from '@/server/domain/passkeys/ruling';
import { acting, type Write } from '../../procedures';
import { humanProcedure, type AuthedContext } from '../../trpc';
import { id, text } from '../../schemas';
import type { decisionBody } from './schemas';
import { decisionRow, settleTimeout } from './shared';

/** Signed-in humans with one of `roles` in the decision's workspace; an API key gets 403 human_session_required. */
export const rulingProcedure = (roles: readonly MembershipRole[]) => acting(humanProcedure, decisionRow(roles));

export const rulingFields = {
  id: id(),
  note: text(0, 2000).optional().meta({ description: 'Why; shown with the resolution and kept in the ledger.' }),
};

interface Ruling {
  ctx: AuthedContext;
  input: { id: string; note?: string; option_ids?: string[]; arguments?: Record<string, unknown>; passkey?: PasskeyAnswer };
  actor: Actor;
  row: DecisionRow;
  write: Write<z.input<typeof decisionBody>, z.output<typeof decisionBody>>;
}

/** The resolver of a ruling with `outcome`. */
export const rule =
  (outcome: RulingInput['outcome']) =>
  async ({ ctx, input, actor, row, write }: Ruling) => {
    await settleTimeout(ctx, row);
    return write(async (tx) => {
      const signing = signingOf(ctx.runtime);
      const { option_ids, note } = input;
      const ruled = await ruleOnDecision(
        tx,
        actor,
        input.id,
        { outcome, option_ids, note, arguments: input.arguments, passkey: input.passkey },
        signing,
      );
      const [decision] = await decisionViews(tx, row.workspaceId, [ruled], signing, actor);
      return { decision: decision! };
    });
  };
