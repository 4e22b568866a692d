/**
 * Runs of tasks: start, read, checkpoint, heartbeat, finish, and the control actions of the run state machine.
 * One file per procedure; the schemas they share are in shared.ts.
 */
import { router } from '../../trpc';
import { listProcedure } from './list';
import { createProcedure } from './create';
import { getProcedure } from './get';
import { checkpointProcedure } from './checkpoint';
import { finishProcedure } from './finish';
import { actionProcedure } from './action';
import { heartbeatProcedure } from './heartbeat';

export const runsRouter = router({
  list: listProcedure,
  create: createProcedure,
  get: getProcedure,
  checkpoint: checkpointProcedure,
  finish: finishProcedure,
  action: actionProcedure,
  heartbeat: heartbeatProcedure,
});
