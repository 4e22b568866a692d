/** POST /initiatives: Create an initiative, optionally with its whole tree. */
import { createInitiativeTree } from '@/server/domain/initiatives/create-initiative';
import { initiativeView, treeView } from '@/server/domain/initiatives/tree-view';
import { initiativeRow, milestoneRow, taskRow, workstreamRow } from '@/server/domain/hierarchy/records';
import { z } from 'zod';
import { approverProcedure } from '../../procedures';
import { mutationHeaders } from '../../schemas';
import { initiativeMeta, initiativeSchema, treeSchema } from './schemas';
import { createInput } from './tree-input';

const createOutput = z
  .object({
    data: z.object({
      initiative: initiativeSchema,
      tree: treeSchema,
      refs: z.record(z.string(), z.uuid()).meta({ description: 'Each ref you sent, with the id it was given.' }),
    }),
    meta: initiativeMeta.extend({ duplicate: z.boolean().meta({ description: 'true on an idempotent replay.' }) }),
  })
  .meta({ id: 'CreateInitiativeResponse' });
type CreateBody = z.infer<typeof createOutput>;

export const createProcedure = approverProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/initiatives',
      tags: ['initiatives'],
      summary: 'Create an initiative, optionally with its whole tree',
      description:
        'One transaction, one ledger event per created node (initiative.created, workstream.created, ' +
        'milestone.created, task.created). With an Idempotency-Key, the same key and body replay the original ' +
        'response (200).',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original response, with meta.duplicate true.' },
    errorCodes: ['forbidden', 'invalid_idempotency_key', 'idempotency_conflict', 'idempotency_in_progress'],
  })
  .input(createInput)
  .output(createOutput)
  .mutation(({ input, actor, write }) => {
    const { workspace_id: _named, ...tree } = input;
    const { workspaceId } = actor;
    const replay = (body: CreateBody): CreateBody => ({ ...body, meta: { ...body.meta, duplicate: true } });
    return write(
      async (tx) => {
        const at = new Date();
        const plan = await createInitiativeTree(tx, actor, tree, { at });
        const meta = { workspaceId, version: 1, at };
        return {
          data: {
            initiative: initiativeView(initiativeRow(plan.initiative, meta)),
            tree: treeView(
              plan.workstreams.map((w) => workstreamRow(w, meta)),
              plan.milestones.map((m) => milestoneRow(m, meta)),
              plan.tasks.map((t) => taskRow(t, meta)),
            ),
            refs: plan.refs,
          },
          meta: { apiVersion: '1' as const, workspaceId, projectionStatus: 'live_rows' as const, duplicate: false },
        };
      },
      { replay },
    );
  });
