/** POST /decisions/{id}/attention: Ask a human to look at a pending decision. */
import { z } from 'zod';
import { continuationStrategies } from '@/db/schema';
import { notifyApprovers } from '@/server/domain/decisions/notify-approvers';
import { POLL_AFTER_MS, requestAttention } from '@/server/domain/decisions/request-attention';
import { RULING_ROLES } from '@/server/domain/decisions/policy';
import { apiMeta, id, mutationHeaders, text, timestamp } from '../../schemas';
import { decisionProcedure, settleTimeout } from './shared';

const attentionInput = z.strictObject({
  id: id(),
  recommended_option_id: text(1, 120).optional().meta({ description: 'One of the decision’s shape_context.options[].id.' }),
  recommendation_note: text(0, 2000).optional(),
  impact_if_delayed: text(0, 500).optional(),
  continuation: z
    .strictObject({ strategy: z.enum(continuationStrategies) })
    .optional()
    .meta({
      description:
        'What should happen once the decision is approved: resume_session resumes the run paused for it, restart_task ' +
        're-dispatches its task, manual leaves it to the agent.',
    }),
});

const attentionOutput = z
  .object({
    data: z.object({
      decision_id: z.uuid(),
      status: z.literal('pending'),
      attention_id: z.uuid(),
      request_count: z.int(),
      requested_at: timestamp(),
      blocking: z.object({ run_id: z.uuid().nullable(), initiative_id: z.uuid().nullable(), workstream_id: z.uuid().nullable() }),
      poll_url: z.string().meta({ description: 'Relative: /api/v1/decisions/<decision_id>.' }),
      resolve_url: z.url().meta({ description: 'Where a human rules: {app_url}/decisions/<decision_id>.' }),
      poll_after_ms: z.int().meta({ description: 'critical 5000, urgent 15000, standard 60000, deferred 300000.' }),
    }),
    meta: apiMeta.extend({ duplicate: z.boolean().meta({ description: 'True when this call refreshed an existing attention record.' }) }),
  })
  .meta({ id: 'AttentionResponse' });

export const requestAttentionProcedure = decisionProcedure(RULING_ROLES)
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions/{id}/attention',
      tags: ['decisions'],
      summary: 'Ask a human to look at a pending decision',
      description:
        'Creates the attention record, or refreshes it: attention_id and requested_at are kept, request_count ' +
        'advances, and the fields sent replace those stored (fields left out keep their value). Workspace, initiative ' +
        'and run are read from the decision; any other field is 400 unknown_field. Idempotency-Key is accepted for ' +
        'forward compatibility only.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found', 'forbidden', 'decision_not_pending', 'invalid_idempotency_key'],
  })
  .input(attentionInput)
  .output(attentionOutput)
  .mutation(async ({ ctx, input, actor, row, write }) => {
    const { id: decisionId, ...fields } = input;
    await settleTimeout(ctx, row);
    const answer = await write(async (tx) => {
      const result = await requestAttention(tx, actor, decisionId, fields);
      const d = result.decision;
      return {
        data: {
          decision_id: d.id,
          status: 'pending' as const,
          attention_id: result.attention.attention_id,
          request_count: result.attention.request_count,
          requested_at: result.attention.requested_at,
          blocking: { run_id: d.runId, initiative_id: d.initiativeId, workstream_id: d.workstreamId },
          poll_url: `/api/v1/decisions/${d.id}`,
          resolve_url: `${ctx.runtime.env.APP_URL.replace(/\/$/, '')}/decisions/${d.id}`,
          poll_after_ms: POLL_AFTER_MS[d.urgency],
        },
        meta: { apiVersion: '1' as const, workspaceId: d.workspaceId, duplicate: result.repeated },
      };
    });
    // Committed: mail the approvers and owners, without making the agent wait for SMTP.
    void notifyApprovers(ctx.runtime, decisionId);
    return answer;
  });
