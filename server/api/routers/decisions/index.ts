/**
 * Decisions: raise (agents and humans), poll and list, ask for attention, and the human ruling;
 * for the web interface, the inbox of one workspace, what waits across all of a person's, and the
 * passkey challenge of an approval, and whose turn it is under a decision's policy.
 * One file per procedure; the decision as shown is in schemas.ts, the builder of those acting on one
 * decision and its timeout in shared.ts, and what the three rulings share in ruling.ts.
 */
import { router } from '../../trpc';
import { createProcedure } from './create';
import { getProcedure } from './get';
import { listProcedure } from './list';
import { requestAttentionProcedure } from './request-attention';
import { approveProcedure } from './approve';
import { declineProcedure } from './decline';
import { cancelProcedure } from './cancel';
import { inboxProcedure } from './inbox';
import { acrossWorkspacesProcedure } from './across-workspaces';
import { passkeyChallengeProcedure } from './passkey-challenge';
import { turnProcedure } from './turn';

export const decisionsRouter = router({
  create: createProcedure,
  get: getProcedure,
  list: listProcedure,
  requestAttention: requestAttentionProcedure,
  approve: approveProcedure,
  decline: declineProcedure,
  cancel: cancelProcedure,
  inbox: inboxProcedure,
  acrossWorkspaces: acrossWorkspacesProcedure,
  passkeyChallenge: passkeyChallengeProcedure,
  turn: turnProcedure,
});
