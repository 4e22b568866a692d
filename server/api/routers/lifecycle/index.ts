/** POST /lifecycle, the API's name for node actions on the work hierarchy (server/domain/node-actions): act.ts. */
import { router } from '../../trpc';
import { actProcedure } from './act';

export const lifecycleRouter = router({
  act: actProcedure,
});
