/** API keys of a workspace, for its owners in the web interface (not published as REST). One file per procedure. */
import { router } from '../../trpc';
import { listProcedure } from './list';
import { createProcedure } from './create';
import { revokeProcedure } from './revoke';

export const apiKeysRouter = router({
  list: listProcedure,
  create: createProcedure,
  revoke: revokeProcedure,
});
