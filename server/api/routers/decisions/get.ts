/** GET /decisions/{id}: Poll a decision. */
import { z } from 'zod';
import { id } from '../../schemas';
import { decisionBody } from './schemas';
import { decisionProcedure, settleTimeout, viewOf } from './shared';

export const getProcedure = decisionProcedure()
  .meta({
    openapi: {
      method: 'GET',
      path: '/decisions/{id}',
      tags: ['decisions'],
      summary: 'Poll a decision',
      description:
        'The poll_url. Shows the resolution once a human has ruled (or the decision timed out), the attention record and the history.',
    },
    auth: ['ApiKey', 'Session'],
    errorCodes: ['not_found'],
  })
  .input(z.strictObject({ id: id() }))
  .output(decisionBody)
  .query(async ({ ctx, row, actor }) => {
    await settleTimeout(ctx, row);
    return { decision: await viewOf(ctx, row.workspaceId, row.id, actor) };
  });
