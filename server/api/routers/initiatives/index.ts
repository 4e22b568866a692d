/**
 * Initiatives with their tree (create in one call, read back), and the operating map.
 * One file per procedure; the schemas they share are in schemas.ts (the create body in
 * tree-input.ts, the map in map-schemas.ts).
 */
import { router } from '../../trpc';
import { createProcedure } from './create';
import { listProcedure } from './list';
import { getProcedure } from './get';
import { operatingMapProcedure } from './operating-map';

export const initiativesRouter = router({
  create: createProcedure,
  list: listProcedure,
  get: getProcedure,
  operatingMap: operatingMapProcedure,
});
