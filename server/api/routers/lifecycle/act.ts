/** POST /lifecycle: pause, resume, retry or cancel a node of the work hierarchy, with its cascade. */
import { z } from 'zod';
import { initiatives, milestones, runs, tasks, workstreams } from '@/db/schema';
import { applyNodeAction } from '@/server/domain/node-actions/apply';
import { NODE_ACTIONS } from '@/server/domain/node-actions/plan';
import { LEVELS, type Level } from '@/server/domain/status-changes';
import { AppError } from '@/server/errors';
import { actorFor } from '../../locate';
import { acting } from '../../procedures';
import { authenticatedProcedure, OWNERS, type AuthedContext } from '../../trpc';
import { id, jsonBoolean, mutationHeaders, text } from '../../schemas';

const TABLE = { initiative: initiatives, workstream: workstreams, milestone: milestones, task: tasks, run: runs } as const;

const lifecycleInput = z
  .strictObject({
    level: z.enum(LEVELS),
    id: id(),
    action: z.enum(NODE_ACTIONS),
    reason: text(1, 1000).optional().meta({ description: 'Why, in words; kept in every event of the action.' }),
    dry_run: jsonBoolean()
      .default(false)
      .meta({ description: 'true: answer with what the action would change (counts and ids) and change nothing.' }),
  })
  .meta({ id: 'LifecycleRequest' });

const lifecycleOutput = z
  .object({
    ok: z.literal(true),
    action: z.enum(NODE_ACTIONS),
    level: z.enum(LEVELS),
    id: z.uuid(),
    dry_run: z.boolean(),
    affected: z.object({
      nodes: z.int().meta({ description: 'Nodes (initiatives, workstreams, milestones, tasks and runs) whose status changed.' }),
      runsPaused: z.int(),
      runsCancelled: z.int(),
      redispatched: z.int().meta({ description: 'Tasks given a new (queued) run by retry.' }),
    }),
    changes: z
      .array(z.object({ level: z.enum(LEVELS), id: z.uuid(), from: z.string(), to: z.string() }))
      .meta({ description: 'Each status change, in the order written (for a dry run: the changes it would make).' }),
    redispatched_tasks: z.array(z.uuid()),
    runs_started: z.array(z.uuid()).meta({ description: 'The new runs of re-dispatched tasks (empty for a dry run).' }),
    decisions_cancelled: z
      .array(z.uuid())
      .meta({ description: 'Pending decisions cancelled with their cancelled runs (for a dry run: those it would cancel).' }),
    message: z.string(),
  })
  .meta({ id: 'LifecycleResponse' });

/** The node the input names, at its level: 404 (naming the level) for anyone outside its workspace. */
const ofNode = async (ctx: AuthedContext, input: { level: Level; id: string }) => {
  const missing = () => new AppError('not_found', `No ${input.level} with that id in your workspace.`, { fields: ['id'] });
  return { actor: await actorFor(ctx, TABLE[input.level], input.id, missing, OWNERS) };
};

export const actProcedure = acting(authenticatedProcedure, ofNode)
  .meta({
    openapi: {
      method: 'POST',
      path: '/lifecycle',
      tags: ['lifecycle'],
      summary: 'Pause, resume, retry or cancel a node and what is under it',
      description:
        '`pause`: the node, its active descendants and their queued or running runs become `paused`. `resume`: ' +
        'restores exactly what that pause changed (nodes paused on their own stay paused; refused while a node ' +
        'above is paused). `cancel`: the node, its open descendants and their open runs become `cancelled`, and ' +
        'pending decisions of those runs are cancelled. `retry`: failed or cancelled tasks under the node go back ' +
        'to `todo` with a new queued run each (cancelled containers on the way are reopened). One transaction, ' +
        'one ledger event per changed node. Repeating an applied action is 200 with zero counts; an action that ' +
        'cannot apply is 409 lifecycle_action_failed. Idempotency-Key is accepted for forward compatibility only.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden', 'lifecycle_action_failed', 'invalid_idempotency_key'],
  })
  .input(lifecycleInput)
  .output(lifecycleOutput)
  .mutation(({ input, actor, write }) =>
    write(async (tx) => {
      const result = await applyNodeAction(tx, actor, input);
      return { ok: true as const, action: input.action, level: input.level, id: input.id, dry_run: input.dry_run, ...result };
    }),
  );
