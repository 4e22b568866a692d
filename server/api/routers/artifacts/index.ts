/**
 * Artifacts: what agents deliver, registered with its digest, listed, read, and their
 * stored bytes served. One file per procedure; the schemas they share are in shared.ts.
 */
import { router } from '../../trpc';
import { registerProcedure } from './register';
import { listProcedure } from './list';
import { getProcedure } from './get';
import { contentProcedure } from './content';
import { deleteContentProcedure } from './delete-content';

export const artifactsRouter = router({
  register: registerProcedure,
  list: listProcedure,
  get: getProcedure,
  content: contentProcedure,
  deleteContent: deleteContentProcedure,
});
