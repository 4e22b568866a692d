/**
 * The web interface's /ledger page (every member, not published as REST): the newest checkpoint,
 * the witnesses that vouched for it, and the witnesses the owners named.
 */
import { z } from 'zod';
import { listWitnesses } from '@/server/domain/witnesses/witnesses';
import { witnessSummary } from '@/server/ledger/witnesses';
import { humanMemberProcedure } from '../../procedures';
import { id } from '../../schemas';

export const witnessSummaryProcedure = humanMemberProcedure.input(z.strictObject({ workspace_id: id() })).query(async ({ ctx, actor }) => ({
  ...(await witnessSummary(ctx.runtime.db, actor.workspaceId)),
  named: await listWitnesses(ctx.runtime.db, actor.workspaceId),
}));
