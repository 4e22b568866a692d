/**
 * The ledger: GET /ledger/verify (recompute the workspace's chain, name the first broken link);
 * and for the web interface's /ledger page, browsing events and verifying in steps. One file per procedure.
 */
import { router } from '../../trpc';
import { verifyProcedure } from './verify';
import { browseProcedure } from './browse';
import { verifyStepProcedure } from './verify-step';

export const ledgerRouter = router({
  verify: verifyProcedure,
  browse: browseProcedure,
  verifyStep: verifyStepProcedure,
});
