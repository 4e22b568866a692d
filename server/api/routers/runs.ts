/** Runs of tasks: start, read, checkpoint, finish, and the control actions of the run state machine. */
import { z } from 'zod';
import { runs, runStatuses, tasks } from '@/db/schema';
import { RUN_ACTION_NAMES } from '@/server/domain/runs/machine';
import { addCheckpoint, createRun, finishRun } from '@/server/domain/runs/runs';
import { applyRunAction } from '@/server/domain/runs/actions';
import { loadRunView, runView, type CheckpointView, type RunView } from '@/server/domain/runs/view';
import { AppError } from '@/server/errors';
import type { Actor, Trace } from '@/server/domain/actor';
import { openList, pageMeta, pageOf, pageParams } from '../keyset';
import { actorFor } from '../locate';
import { checkedInTransaction, runMutation } from '../mutation';
import { listRuns } from '@/server/domain/runs/list';
import { memberProcedure, router, type ApiContext, type Principal } from '../trpc';
import { id, jsonObject, mutationHeaders, text, timestamp } from '../schemas';

const WRITE_ROLES = ['owner'] as const;

const checkpointSchema = z
  .object({
    checkpointId: z.uuid(),
    runId: z.uuid(),
    position: z.int().min(1).meta({ description: '1 for the run’s first checkpoint, then +1.' }),
    label: z.string(),
    state: jsonObject().nullable(),
    created_at: timestamp(),
  })
  .meta({ id: 'RunCheckpoint' });

const runSchema = z
  .object({
    runId: z.uuid(),
    status: z.enum(runStatuses),
    workspace_id: z.uuid(),
    task_id: z.uuid(),
    agent_id: z.string().nullable(),
    paused_for_decision_id: z.uuid().nullable().meta({ description: 'The blocking decision the run is paused for, if any.' }),
    checkpoint_id: z.uuid().nullable().meta({ description: 'The checkpoint the run was last rolled back to.' }),
    summary: z.string().nullable(),
    aggregateVersion: z.int().meta({ description: 'The run’s aggregateVersion in the ledger (+1 per event of the run).' }),
    created_at: timestamp(),
    updated_at: timestamp(),
    finished_at: timestamp().nullable(),
    checkpoints: z.array(checkpointSchema),
  })
  .meta({ id: 'Run' });

const runResponse = z.object({ ok: z.literal(true), data: runSchema }).meta({ id: 'RunResponse' });
const checkpointResponse = z.object({ ok: z.literal(true), data: checkpointSchema }).meta({ id: 'RunCheckpointResponse' });
const actionResponse = z
  .object({
    ok: z.literal(true),
    data: z.object({
      runId: z.uuid(),
      action: z.enum(RUN_ACTION_NAMES),
      status: z.enum(runStatuses).meta({ description: 'The run’s status after the action.' }),
    }),
  })
  .meta({ id: 'RunActionResponse' });

type Caller = ApiContext & { principal: Principal; trace: Trace };

const noSuchRun = () => new AppError('not_found', 'No such run in your workspace.');
const noSuchTask = () => new AppError('not_found', 'No task with that id in your workspace.', { fields: ['task_id'] });

/** The run as the caller may act on it: its workspace's actor; 404 for anyone outside it. */
const locateRun = (ctx: Caller, runId: string, roles?: readonly ('owner' | 'approver' | 'viewer')[]): Promise<Actor> =>
  actorFor(ctx, runs, runId, noSuchRun, roles);

const runPath = z.strictObject({ runId: id() });

const runSummary = runSchema
  .omit({ checkpoints: true })
  .extend({ checkpoint_count: z.int().meta({ description: 'Checkpoints recorded (GET /runs/{runId} lists them).' }) })
  .meta({ id: 'RunSummary' });

export const runsRouter = router({
  list: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/runs',
        tags: ['runs'],
        summary: 'List runs',
        description: 'The workspace’s runs, newest first, filtered by task, status (repeatable) and agent, paged by cursor.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['forbidden', 'invalid_cursor'],
    })
    .input(
      z.strictObject({
        task_id: id().optional(),
        status: z.array(z.enum(runStatuses)).max(6).optional().meta({ description: 'Repeatable.' }),
        agent_id: text(1, 200).optional(),
        ...pageParams,
      }),
    )
    .output(z.object({ data: z.array(runSummary), meta: pageMeta }).meta({ id: 'RunPage' }))
    .query(async ({ ctx, input }) => {
      const { workspaceId, scope, after } = openList(ctx, 'runs', input);
      const { db, secrets } = ctx.runtime;
      const rows = await listRuns(db, workspaceId, {
        taskId: input.task_id,
        status: input.status,
        agentId: input.agent_id,
        after,
        limit: input.limit + 1,
      });
      const { page, meta } = pageOf(rows, (r) => r.run, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
      return {
        data: page.map(({ run, checkpoints }) => {
          const { checkpoints: _none, ...view } = runView(run, []);
          return { ...view, checkpoint_count: checkpoints };
        }),
        meta,
      };
    }),

  create: memberProcedure
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
          'task’s agent. With an Idempotency-Key the same key and body replay the original response (200).',
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
    .input(z.strictObject({ task_id: id(), agent_id: text(1, 200).optional() }))
    .output(checkedInTransaction(runResponse))
    .mutation(async ({ ctx, input }) => {
      const actor = await actorFor(ctx, tasks, input.task_id, noSuchTask, WRITE_ROLES);
      return runMutation(ctx, actor, { status: 201, replay: (b) => b, output: runResponse }, async (tx) => ({
        ok: true as const,
        data: await createRun(tx, actor, input),
      }));
    }),

  get: memberProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/runs/{runId}',
        tags: ['runs'],
        summary: 'Read a run with its checkpoints',
        description: 'The run (its task, agent, status and state) with its checkpoints. 404 `not_found` for a run of another workspace.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found'],
    })
    .input(runPath)
    .output(runResponse)
    .query(async ({ ctx, input }) => {
      const actor = await locateRun(ctx, input.runId);
      const view: RunView | undefined = await loadRunView(ctx.runtime.db, actor.workspaceId, input.runId);
      if (!view) throw new AppError('not_found', 'No such run in your workspace.');
      return { ok: true as const, data: view };
    }),

  checkpoint: memberProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/runs/{runId}/checkpoints',
        tags: ['runs'],
        summary: 'Record a checkpoint of a run',
        description:
          'A point the run can be rolled back to (`rollback` with its `checkpointId`). Only a running run records ' +
          'checkpoints; the first checkpoint of a queued (re-dispatched) run starts it (`run.started`). `state` is ' +
          'yours (at most 64 KiB as JSON), kept with the checkpoint and in its ledger event. With an Idempotency-Key ' +
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
    .output(checkedInTransaction(checkpointResponse))
    .mutation(async ({ ctx, input }) => {
      const { runId, ...body } = input;
      const actor = await locateRun(ctx, runId, WRITE_ROLES);
      return runMutation(ctx, actor, { status: 201, replay: (b) => b, output: checkpointResponse }, async (tx) => ({
        ok: true as const,
        data: (await addCheckpoint(tx, actor, runId, body)) satisfies CheckpointView,
      }));
    }),

  finish: memberProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/runs/{runId}/finish',
        tags: ['runs'],
        summary: 'Report that a run ended',
        description:
          '`completed` or `failed`, from `running`; the task becomes `done` or `failed`. Repeating the same outcome ' +
          'on a run that already has it is 200 with no new event; anything else is 409 invalid_state_transition.',
        requestHeaders: mutationHeaders,
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found', 'forbidden', 'invalid_state_transition', 'invalid_idempotency_key'],
    })
    .input(runPath.extend({ outcome: z.enum(['completed', 'failed']), summary: text(0, 4000).optional() }))
    .output(checkedInTransaction(runResponse))
    .mutation(async ({ ctx, input }) => {
      const { runId, ...body } = input;
      const actor = await locateRun(ctx, runId, WRITE_ROLES);
      return runMutation(ctx, actor, { status: 200, output: runResponse }, async (tx) => ({
        ok: true as const,
        data: await finishRun(tx, actor, runId, body),
      }));
    }),

  action: memberProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/runs/{runId}/actions/{action}',
        tags: ['runs'],
        summary: 'Pause, resume, cancel or roll back a run',
        description:
          'The run state machine: `pause` queued|running → paused; `resume` paused → running; `cancel` ' +
          'queued|running|paused → cancelled (pending decisions raised on the run are cancelled with it); `rollback` ' +
          '(body `checkpointId`, a checkpoint of this run) running|paused|failed → paused at that checkpoint. Each ' +
          'applied action is one `run.*` ledger event (plus `task.status_changed` when the task’s status follows). ' +
          'The same action on a run already in its target state is 200 with no new event; any other move is 409 ' +
          'invalid_state_transition with `details.status`. Idempotency-Key is accepted for forward compatibility only.',
        requestHeaders: mutationHeaders,
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['not_found', 'forbidden', 'invalid_state_transition', 'invalid_idempotency_key'],
    })
    .input(
      runPath.extend({
        action: z.enum(RUN_ACTION_NAMES),
        reason: text(1, 1000).optional().meta({ description: 'Why, in words; kept in the event.' }),
        checkpointId: id().optional().meta({ description: 'rollback only: the checkpoint to go back to (required there).' }),
      }),
    )
    .output(checkedInTransaction(actionResponse))
    .mutation(async ({ ctx, input }) => {
      const { runId, action, ...body } = input;
      const actor = await locateRun(ctx, runId, WRITE_ROLES);
      return runMutation(ctx, actor, { status: 200, output: actionResponse }, async (tx) => {
        const result = await applyRunAction(tx, actor, runId, action, body);
        return { ok: true as const, data: { runId: result.runId, action: result.action, status: result.status } };
      });
    }),
});
