/**
 * Duplicate-trigger claims: the first claimant of a fingerprint wins until expiry or release. One
 * file per procedure; shared.ts holds what they share.
 */
import { router } from '../../trpc';
import { claimProcedure } from './claim';
import { releaseProcedure } from './release';

export const dedupRouter = router({
  claim: claimProcedure,
  release: releaseProcedure,
});
