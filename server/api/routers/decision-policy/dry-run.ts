/** POST /decision-policy/dry-run: the last decided decisions replayed under proposed rules. */
import { z } from 'zod';
import { dryRun } from '@/server/domain/decisions/dry-run';
import { ownerProcedure } from '../../procedures';
import { id, jsonNumber } from '../../schemas';
import { common, rulesInput } from './shared';

const outcome = z.enum(['approved', 'declined', 'pending']);

export const dryRunProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'POST',
      path: '/decision-policy/dry-run',
      summary: 'Try proposed rules against the decisions already decided',
      description:
        'Replays the workspace’s last `limit` decisions approved or declined by a person (newest first; default 500, at most ' +
        '5,000) under the proposed `rules`: for each, the rule that would apply (null: none, the default policy) and what the ' +
        'rulings it recorded would have come to (`would_be`): the same outcome, the other, or `pending` when they would not ' +
        'have met the policy. Members are taken as they are now; escalation as having reached everyone. Writes nothing.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden'],
  })
  .input(
    z.strictObject({
      workspace_id: id().optional().meta({ description: 'Default: your API key’s workspace.' }),
      rules: rulesInput,
      limit: jsonNumber({ min: 1, max: 5000, int: true }).default(500),
    }),
  )
  .output(
    z
      .object({
        data: z.array(
          z.object({
            decision_id: z.uuid(),
            title: z.string(),
            status: z.enum(['approved', 'declined']),
            rule_index: z.int().nullable(),
            would_be: outcome,
            would_change: z.boolean(),
          }),
        ),
        totals: z.object({
          decisions: z.int(),
          would_change: z.int(),
          would_be: z.object({ approved: z.int(), declined: z.int(), pending: z.int() }),
        }),
      })
      .meta({ id: 'DecisionPolicyDryRun' }),
  )
  .mutation(({ ctx, input, actor }) => dryRun(ctx.runtime.db, actor.workspaceId, input.rules, input.limit));
