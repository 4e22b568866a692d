/**
 * Receipts: listing and exporting a workspace's, and the public validator's metadata and schema
 * (the validation itself: server/api/receipt-validator.ts). One file per procedure.
 */
import { router } from '../../trpc';
import { listProcedure } from './list';
import { validatorMetadataProcedure } from './validator-metadata';
import { schemaProcedure } from './receipt-schema';
import { exportProcedure } from './export';

export const receiptsRouter = router({
  list: listProcedure,
  validatorMetadata: validatorMetadataProcedure,
  schema: schemaProcedure,
  export: exportProcedure,
});
