/** Grants: the single-use permissions approvals issue for their actions (server/domain/grants/). */
import { router } from '../../trpc';
import { consumeProcedure } from './consume';

export const grantsRouter = router({
  consume: consumeProcedure,
});
