/**
 * Public documentation routes: the error codes, the OpenAPI document, and the health and
 * readiness checks. One file per procedure.
 */
import { router } from '../../trpc';
import { errorsProcedure } from './errors';
import { openapiProcedure } from './openapi';
import { healthProcedure } from './health';
import { readyProcedure } from './ready';

export const metaRouter = router({
  errors: errorsProcedure,
  openapi: openapiProcedure,
  health: healthProcedure,
  ready: readyProcedure,
});
