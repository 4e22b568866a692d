/** GET /events/stream: the workspace's accepted events in cursor order (JSON pages). */
import { z } from 'zod';
import { decodeCursor, encodeCursor } from '@/server/ledger/cursor';
import { readEvents } from '@/server/ledger/read';
import { AppError } from '@/server/errors';
import { apiKeyProcedure, router } from '../trpc';
import { apiMeta, EVENT_TYPE_PATTERN_SOURCE, ledgerEventSchema } from '../schemas';

const listInput = z.strictObject({
  cursor: z
    .string()
    .max(128)
    .meta({ description: 'Opaque: meta.nextCursor of the previous page, passed unchanged. Omit to read from the first event.' })
    .optional(),
  limit: z.coerce.number().int().min(1).max(100).meta({ description: '1 to 100, default 50.' }).default(50),
  type: z
    .array(z.string().regex(new RegExp(EVENT_TYPE_PATTERN_SOURCE)))
    .max(20)
    .meta({ description: 'Only events of these types. Repeat the parameter for several (`type=a&type=b`), up to 20.' })
    .optional(),
  format: z.enum(['json']).meta({ description: '`json` (default): a page of events.' }).default('json'),
});

const listOutput = z
  .object({
    data: z.array(ledgerEventSchema),
    meta: apiMeta.extend({
      nextCursor: z.string().meta({
        description:
          'Pass it back as `cursor` to continue. Always present: when the page is empty it marks the same position, so a ' +
          'poller can keep asking. Save it only after the page has been processed.',
      }),
      hasMore: z.boolean().meta({ description: 'True when more matching events exist after this page.' }),
      limit: z.int(),
    }),
  })
  .meta({ id: 'EventPage' });

export const eventsRouter = router({
  list: apiKeyProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/events/stream',
        tags: ['events'],
        summary: 'Read accepted events by cursor',
        description:
          'Events of your workspace in sequence order (commit order: a cursor never skips an event committed later ' +
          'with a lower sequence). Delivery can repeat across retries; deduplicate by event `id`. Each event carries ' +
          '`previousHash` and `eventHash`, so a reader can check every link as it reads.',
      },
      errorCodes: ['invalid_cursor'],
    })
    .input(listInput)
    .output(listOutput)
    .query(async ({ ctx, input }) => {
      const { workspaceId } = ctx.actor;
      const secret = ctx.runtime.secrets.cursor;
      let after = 0;
      if (input.cursor !== undefined) {
        const position = decodeCursor(secret, workspaceId, input.cursor);
        if (!position) throw new AppError('invalid_cursor', 'This cursor was not issued by this service for your workspace.');
        after = position.sequence;
      }
      // One extra row tells whether another page exists.
      const rows = await readEvents(ctx.runtime.db, workspaceId, { after, limit: input.limit + 1, types: input.type });
      const hasMore = rows.length > input.limit;
      const data = hasMore ? rows.slice(0, input.limit) : rows;
      const last = data.length > 0 ? data[data.length - 1]!.sequence : after;
      return {
        data,
        meta: { apiVersion: '1' as const, workspaceId, nextCursor: encodeCursor(secret, workspaceId, last), hasMore, limit: input.limit },
      };
    }),
});
