/**
 * A worker thread of verify-parallel.ts's pool: parses each batch of events it is sent (from the
 * database, or from a bundle file: bundle-file.ts) and runs ChainVerifier over it, answering in the order the batches came.
 */
import { parentPort } from 'node:worker_threads';
import { rowsOfBatch, verifyBundleBatch, verifyRows, type Batch } from './verify-batch';

parentPort!.on('message', (batch: Batch) =>
  parentPort!.postMessage('json' in batch ? verifyBundleBatch(batch) : verifyRows(rowsOfBatch(batch), batch.treeSize)),
);
