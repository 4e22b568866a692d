/**
 * Tasks as a work queue: GET /tasks (filters, two orders, snapshot-pinned cursor paging),
 * GET /tasks/{id} (the task with its placement, receipt, runs, decisions and dependencies), and
 * PATCH /tasks/{id} (JSON merge patch of what a task says; If-Match; ETag), and POST /tasks/claim
 * (take the next ready task and start its run). One file per
 * procedure; the schemas they share are in shared.ts and task-schema.ts.
 */
import { router } from '../../trpc';
import { listProcedure } from './list';
import { getProcedure } from './get';
import { updateProcedure } from './update';
import { claimProcedure } from './claim';

export const tasksRouter = router({
  list: listProcedure,
  get: getProcedure,
  update: updateProcedure,
  claim: claimProcedure,
});
