/**
 * The workspace's decision-policy rules: read them, replace them, and try proposed ones
 * against the decisions already decided. One file per procedure; what they share is shared.ts.
 */
import { router } from '../../trpc';
import { getProcedure } from './get';
import { putProcedure } from './put';
import { dryRunProcedure } from './dry-run';

export const decisionPolicyRouter = router({
  get: getProcedure,
  put: putProcedure,
  dryRun: dryRunProcedure,
});
