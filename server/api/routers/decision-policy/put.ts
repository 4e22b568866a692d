/** PUT /decision-policy: replace the workspace's rules (a ledger event with the whole document). */
import { z } from 'zod';
import { putRules } from '@/server/domain/decisions/workspace-policy';
import { ownerProcedure } from '../../procedures';
import { id } from '../../schemas';
import { etag, ifMatchOf, patchHeaders } from '../../versioning';
import { answered, common, rulesBody, rulesInput } from './shared';

export const putProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'PUT',
      path: '/decision-policy',
      summary: 'Replace the workspace’s decision-policy rules',
      description:
        'The whole list, in order; `[]` removes every rule. Each policy is stored resolved (every stage with its quorum and ' +
        'approvers), the version goes up by one, and `decision_policy.updated` carries the whole document. Decisions already ' +
        'raised keep the policy they were raised with. The members a policy names must be owners or approvers (400). With ' +
        '`If-Match: "<version>"`, rules that have moved past it are 412 precondition_failed and nothing changes. Try rules ' +
        'first with POST /decision-policy/dry-run.',
      requestHeaders: patchHeaders,
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden', 'precondition_failed', 'invalid_idempotency_key', 'idempotency_conflict', 'idempotency_in_progress'],
    successHeaders: { ETag: 'The rules’ new version, quoted.' },
  })
  .input(z.strictObject({ workspace_id: id().optional().meta({ description: 'Default: your API key’s workspace.' }), rules: rulesInput }))
  .output(rulesBody)
  .mutation(async ({ ctx, input, actor, write }) => {
    const ifMatch = ifMatchOf(ctx.headers);
    const body = await write(async (tx) => answered(await putRules(tx, actor, input.rules, ifMatch)), { replay: (stored) => stored });
    ctx.res.headers.ETag = etag(body.version);
    return body;
  });
