/** The human inbox (UI only): pending first by urgency and age, with counts. */
import { z } from 'zod';
import { decisionStatuses, decisionUrgencies } from '@/db/schema';
import { inboxCounts, inboxDecisions } from '@/server/domain/decisions/list';
import { sweepDecisionTimeouts } from '@/server/domain/decisions/timeouts';
import { decisionViews } from '@/server/domain/decisions/view';
import { needsYou } from '@/server/domain/decisions/turn';
import { delegatingTo } from '@/server/domain/workspaces/delegation';
import { signingOf } from '@/server/runtime';
import { humanMemberProcedure } from '../../procedures';
import { id } from '../../schemas';

export const inboxProcedure = humanMemberProcedure
  .input(
    z.strictObject({
      workspace_id: id().optional(),
      status: z.array(z.enum(decisionStatuses)).optional(),
      urgency: z.array(z.enum(decisionUrgencies)).optional(),
    }),
  )
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { db } = ctx.runtime;
    await sweepDecisionTimeouts(db, { workspaceId });
    const rows = await inboxDecisions(db, workspaceId, { status: input.status, urgency: input.urgency, limit: 200 });
    const viewer = { user_id: actor.id, role: actor.role! };
    const away = await delegatingTo(db, workspaceId, actor.id);
    return {
      workspaceId,
      role: actor.role!,
      /** The pending decisions whose policy waits on this person now; the others pending wait on someone else. */
      needsYou: rows.filter((r) => needsYou(r, viewer, away)).map((r) => r.id),
      decisions: await decisionViews(db, workspaceId, rows, signingOf(ctx.runtime), actor),
      counts: await inboxCounts(db, workspaceId),
    };
  });
