/** Work items: POST /work, the agents' hot path (a task and its receipt in one write). */
import { router } from '../../trpc';
import { createProcedure } from './create';

export const workRouter = router({
  create: createProcedure,
});
