/**
 * The ledger: GET /ledger/verify (recompute the workspace's chain, name the first broken link); its
 * signed tree (keys, the newest checkpoint, inclusion and consistency proofs, witnesses'
 * cosignatures, the witnesses its owners name); and for the web interface's /ledger page, browsing
 * events, verifying in steps, and the witnesses.
 * One file per procedure.
 */
import { router } from '../../trpc';
import { verifyProcedure } from './verify';
import { browseProcedure } from './browse';
import { verifyStepProcedure } from './verify-step';
import { keysProcedure } from './keys';
import { checkpointProcedure } from './checkpoint';
import { inclusionProcedure } from './inclusion';
import { consistencyProcedure } from './consistency';
import { cosignProcedure } from './cosign';
import { witnessSummaryProcedure } from './witness-summary';
import { nameWitnessProcedure } from './name-witness';
import { listWitnessesProcedure } from './list-witnesses';
import { removeWitnessProcedure } from './remove-witness';

export const ledgerRouter = router({
  verify: verifyProcedure,
  browse: browseProcedure,
  verifyStep: verifyStepProcedure,
  keys: keysProcedure,
  checkpoint: checkpointProcedure,
  inclusionProof: inclusionProcedure,
  consistencyProof: consistencyProcedure,
  cosign: cosignProcedure,
  witnessSummary: witnessSummaryProcedure,
  nameWitness: nameWitnessProcedure,
  listWitnesses: listWitnessesProcedure,
  removeWitness: removeWitnessProcedure,
});
