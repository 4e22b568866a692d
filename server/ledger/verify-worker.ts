/**
 * A worker thread of verify-parallel.ts's pool: parses each batch of events it is sent and runs
 * ChainVerifier over it, answering in the order the batches came.
 */
import { parentPort } from 'node:worker_threads';
import { eventsOfBatch, verifyBatch, type Batch } from './verify-batch';

parentPort!.on('message', (batch: Batch) => parentPort!.postMessage(verifyBatch(eventsOfBatch(batch))));
