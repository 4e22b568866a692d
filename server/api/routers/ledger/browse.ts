/** The web interface's /ledger page (every member, not published as REST): the workspace's events, newest first. */
import { z } from 'zod';
import { readEventsNewestFirst } from '@/server/ledger/read';
import { humanMemberProcedure } from '../../procedures';
import { EVENT_TYPE_PATTERN_SOURCE, id } from '../../schemas';

export const browseProcedure = humanMemberProcedure
  .input(
    z.strictObject({
      workspace_id: id(),
      at: z.int().min(1).optional(),
      event_type: z.string().regex(new RegExp(EVENT_TYPE_PATTERN_SOURCE)).optional(),
      aggregate_id: id().optional(),
      limit: z.int().min(1).max(100).default(50),
    }),
  )
  .query(async ({ ctx, input, actor }) => {
    const rows = await readEventsNewestFirst(ctx.runtime.db, actor.workspaceId, {
      atOrBefore: input.at,
      eventType: input.event_type,
      aggregateId: input.aggregate_id,
      limit: input.limit + 1,
    });
    const page = rows.slice(0, input.limit);
    return { events: page, olderAt: rows.length > input.limit ? page.at(-1)!.sequence - 1 : null };
  });
