/** Lifecycle actions on the work hierarchy: POST /lifecycle (act.ts). */
import { router } from '../../trpc';
import { actProcedure } from './act';

export const lifecycleRouter = router({
  act: actProcedure,
});
