/** The artifact catalog: the kinds of output a task can produce (list.ts). */
import { router } from '../../trpc';
import { listProcedure } from './list';

export const artifactTypesRouter = router({
  list: listProcedure,
});
