/**
 * Webhook endpoints: POST/GET /webhooks, GET/PATCH/DELETE /webhooks/{id}, rotate-secret, test and
 * deliveries. For any API key of the workspace, and for its owners signed in (/settings/webhooks).
 * Delivery itself is server/webhooks/dispatcher.ts. One file per procedure; the schemas they share
 * are in shared.ts.
 */
import { router } from '../../trpc';
import { createProcedure } from './create';
import { listProcedure } from './list';
import { getProcedure } from './get';
import { updateProcedure } from './update';
import { deleteProcedure } from './delete';
import { rotateSecretProcedure } from './rotate-secret';
import { testProcedure } from './send-test';
import { deliveriesProcedure } from './deliveries';

export const webhooksRouter = router({
  create: createProcedure,
  list: listProcedure,
  get: getProcedure,
  update: updateProcedure,
  delete: deleteProcedure,
  rotateSecret: rotateSecretProcedure,
  test: testProcedure,
  deliveries: deliveriesProcedure,
});
