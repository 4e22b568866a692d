/** For the web interface: whose turn it is on a decision under its policy, and what the person looking may do. */
import { z } from 'zod';
import { findDecision } from '@/server/domain/decisions/view';
import { turnOf } from '@/server/domain/decisions/turn';
import { humanProcedure } from '../../trpc';
import { acting } from '../../procedures';
import { id } from '../../schemas';
import { decisionRow } from './shared';

export const turnProcedure = acting(humanProcedure, decisionRow())
  .input(z.strictObject({ id: id() }))
  .query(async ({ ctx, actor, row }) => {
    // Read again: the row found the workspace before any timeout was settled by the page's poll.
    const current = (await findDecision(ctx.runtime.db, row.workspaceId, row.id)) ?? row;
    return turnOf(ctx.runtime.db, current, { user_id: actor.id, role: actor.role ?? 'viewer' });
  });
