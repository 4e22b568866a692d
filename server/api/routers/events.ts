/** GET /events/stream: the workspace's accepted events in cursor order (JSON pages). */
import { z } from 'zod';
import { readEventPage } from '@/server/ledger/page';
import { readEvents } from '@/server/ledger/read';
import { AppError } from '@/server/errors';
import { apiKeyProcedure, router } from '../trpc';
import { apiMeta, EVENT_TYPE_PATTERN_SOURCE, ledgerEventSchema } from '../schemas';

/** The query of GET /events/stream (also parsed by the transport's fast path, server/api/event-page.ts). */
export const eventPageInput = z.strictObject({
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
  format: z
    .enum(['json', 'sse'])
    .meta({
      description:
        '`json` (default): a page of events. `sse`: a bounded Server-Sent Events lease (text/event-stream): each event as ' +
        '`id: <cursor>`, `event: <eventType>`, `data: <the ledger event>`; `: keepalive` comments at least every 15 s; at ' +
        'the end `event: lease_end` with `data: {"nextCursor": …}`, then the response closes. One API key holds at most ' +
        'SSE_LEASES_PER_KEY (default 20) open leases per instance; one more is 429 `rate_limited`, its Retry-After the ' +
        'seconds until the key’s first lease ends.',
    })
    .default('json'),
  workspace_id: z
    .uuid()
    .optional()
    .meta({
      description:
        'For an API key: its own workspace (another is 403). sse with the session cookie (the web interface’s live ' +
        'pages): which of the signed-in human’s workspaces to read, default their first.',
    }),
  last_event_id: z
    .string()
    .max(128)
    .optional()
    .meta({
      description:
        'sse: where to resume (a cursor). The `Last-Event-ID` header, when sent, wins over it, and it over `cursor`; ' +
        'every one given must be a cursor this service issued for your workspace (else 400 invalid_cursor, naming it), ' +
        'and an empty one counts as not given.',
    }),
  lease_ms: z.coerce
    .number()
    .int()
    .min(1)
    .max(300_000)
    .optional()
    .meta({ description: 'sse: lease length, 1 to 300000 ms, default 30000.' }),
  poll_ms: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .meta({ description: 'sse: how often to look for new events when no commit wake-up arrives, 1 to 10000 ms, default 1000.' }),
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
          '`previousHash` and `eventHash`, so a reader can check every link as it reads. The session cookie is ' +
          'accepted for format=sse only (the web interface’s live pages); the JSON form needs an API key.',
      },
      auth: ['ApiKey', 'Session'],
      errorCodes: ['invalid_cursor', 'forbidden'],
    })
    .input(eventPageInput)
    .output(listOutput)
    .query(async ({ ctx, input }) => {
      // The REST transport serves format=sse itself (server/api/event-stream.ts); lease settings mean nothing here.
      if (input.format === 'sse' || input.last_event_id !== undefined || input.lease_ms !== undefined || input.poll_ms !== undefined) {
        throw new AppError('validation_failed', 'last_event_id, lease_ms and poll_ms go with format=sse.', {
          issues: [{ path: 'format', message: 'lease settings need format=sse' }],
        });
      }
      const { workspaceId } = ctx.actor;
      if (input.workspace_id !== undefined && input.workspace_id.toLowerCase() !== workspaceId) {
        throw new AppError('forbidden', 'This API key belongs to another workspace.');
      }
      const page = await readEventPage(ctx.runtime.secrets.cursor, workspaceId, input, (after, limit) =>
        readEvents(ctx.runtime.db, workspaceId, { after, limit, types: input.type }),
      );
      if (!page) throw new AppError('invalid_cursor', 'This cursor was not issued by this service for your workspace.');
      return page;
    }),
});
