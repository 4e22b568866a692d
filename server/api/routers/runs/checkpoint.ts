/** POST /runs/{runId}/checkpoints: Record a checkpoint of a run. */
import { z } from 'zod';
import { addCheckpoint } from '@/server/domain/runs/runs';
import { OWNERS } from '../../trpc';
import { jsonObject, mutationHeaders, text } from '../../schemas';
import { checkpointSchema, runPath, runProcedure } from './shared';

const checkpointResponse = z.object({ ok: z.literal(true), data: checkpointSchema }).meta({ id: 'RunCheckpointResponse' });

export const checkpointProcedure = runProcedure(OWNERS)
  .meta({
    openapi: {
      method: 'POST',
      path: '/runs/{runId}/checkpoints',
      tags: ['runs'],
      summary: 'Record a checkpoint of a run',
      description:
        'A point the run can be rolled back to (`rollback` with its `checkpointId`). Only a running run records ' +
        'checkpoints; the first checkpoint of a queued (re-dispatched) run starts it (`run.started`). `state` is ' +
        'yours (at most 64 KiB as JSON), kept with the checkpoint and in its ledger event. A checkpoint renews the run’s ' +
        'lease as a heartbeat does; from a run whose lease lapsed it is 409 lease_expired and writes nothing. With an Idempotency-Key ' +
        'the same key and body replay the original response (200).',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original response.' },
    errorCodes: [
      'not_found',
      'forbidden',
      'invalid_state_transition',
      'lease_expired',
      'invalid_idempotency_key',
      'idempotency_conflict',
      'idempotency_in_progress',
    ],
  })
  .input(
    runPath.extend({
      label: text(1, 200),
      state: jsonObject()
        .check((c) => {
          if (JSON.stringify(c.value).length > 65_536)
            c.issues.push({ code: 'custom', input: c.value, message: 'must be at most 64 KiB as JSON' });
        })
        .optional(),
    }),
  )
  .output(checkpointResponse)
  .mutation(({ input, actor, write }) => {
    const { runId, ...body } = input;
    return write(async (tx) => ({ ok: true as const, data: await addCheckpoint(tx, actor, runId, body) }), { replay: (b) => b });
  });
