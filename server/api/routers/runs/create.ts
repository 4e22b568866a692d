/** POST /runs: Start a run of a task. */
import { z } from 'zod';
import { tasks } from '@/db/schema';
import { createRun } from '@/server/domain/runs/runs';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { OWNERS } from '../../trpc';
import { id, mutationHeaders, text } from '../../schemas';
import { leaseSecondsInput, runResponse } from './shared';

const noSuchTask = () => new AppError('not_found', 'No task with that id in your workspace.', { fields: ['task_id'] });

export const createProcedure = resourceProcedure(tasks, 'task_id', noSuchTask, OWNERS)
  .meta({
    openapi: {
      method: 'POST',
      path: '/runs',
      tags: ['runs'],
      summary: 'Start a run of a task',
      description:
        'The run starts `running` and its task becomes `in_progress` (a task’s status follows its runs). A task has ' +
        'at most one open run (queued, running or paused); a second, or a run of a task that is done, cancelled or ' +
        'paused, or under a node that is not active, is 409 invalid_state_transition. `agent_id` defaults to the ' +
        'task’s agent. The run holds a lease of `lease_seconds` (default 300): heartbeat it (POST /runs/{runId}/heartbeat) ' +
        'or record checkpoints at least that often, or the service fails the run (`failure_reason` lease_expired) and ' +
        'its task is ready again. To take the next ready task without racing other agents, use POST /tasks/claim. With ' +
        'an Idempotency-Key the same key and body replay the original response (200).',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original response.' },
    errorCodes: [
      'not_found',
      'forbidden',
      'invalid_state_transition',
      'invalid_idempotency_key',
      'idempotency_conflict',
      'idempotency_in_progress',
    ],
  })
  .input(z.strictObject({ task_id: id(), agent_id: text(1, 200).optional(), lease_seconds: leaseSecondsInput().optional() }))
  .output(runResponse)
  .mutation(({ input, actor, write }) =>
    write(async (tx) => ({ ok: true as const, data: await createRun(tx, actor, input) }), { replay: (b) => b }),
  );
