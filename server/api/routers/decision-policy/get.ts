/** GET /decision-policy: the workspace's rules and their version (its ETag). */
import { z } from 'zod';
import { readRules } from '@/server/domain/decisions/workspace-policy';
import { ownerProcedure } from '../../procedures';
import { id } from '../../schemas';
import { etag } from '../../versioning';
import { answered, common, rulesBody } from './shared';

export const getProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/decision-policy',
      summary: 'The workspace’s decision-policy rules',
      description:
        'The ordered rules a decision raised without a policy of its own is matched against (urgency, a glob on action.tool); ' +
        'the first that matches gives its policy, none gives the default (one approval from any owner or approver, veto). ' +
        'Owners and API keys. The ETag is the rules’ version.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['forbidden'],
    successHeaders: { ETag: 'The rules’ version, quoted.' },
  })
  .input(z.strictObject({ workspace_id: id().optional().meta({ description: 'Default: your API key’s workspace.' }) }))
  .output(rulesBody)
  .query(async ({ ctx, actor }) => {
    const rules = await readRules(ctx.runtime.db, actor.workspaceId);
    ctx.res.headers.ETag = etag(rules.version);
    return answered(rules);
  });
