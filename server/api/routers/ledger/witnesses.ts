/** The web interface's /ledger page (every member, not published as REST): the newest checkpoint and its witnesses. */
import { z } from 'zod';
import { witnessSummary } from '@/server/ledger/witnesses';
import { humanMemberProcedure } from '../../procedures';
import { id } from '../../schemas';

export const witnessesProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id() }))
  .query(({ ctx, actor }) => witnessSummary(ctx.runtime.db, actor.workspaceId));
