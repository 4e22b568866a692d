/** POST /decisions/{id}/attention: Ask a human to look at a pending decision. */
import { notifyApprovers } from '@/server/domain/decisions/notify-approvers';
import { POLL_AFTER_MS, requestAttention } from '@/server/domain/decisions/request-attention';
import { RULING_ROLES } from '@/server/domain/decisions/rule';
import { checkedInTransaction, runMutation } from '../../mutation';
import { memberProcedure } from '../../trpc';
import { mutationHeaders } from '../../schemas';
import { attentionInput, attentionOutput, locate, settleTimeout } from './shared';

export const requestAttentionProcedure = memberProcedure
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
  .output(checkedInTransaction(attentionOutput))
  .mutation(async ({ ctx, input }) => {
    const { id: decisionId, ...fields } = input;
    const { actor, row } = await locate(ctx, decisionId, RULING_ROLES);
    await settleTimeout(ctx, row);
    const answer = await runMutation(ctx, actor, { status: 200, output: attentionOutput }, async (tx) => {
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
