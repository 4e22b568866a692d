/**
 * The query of GET /events/stream, for the procedure (list.ts) and for the transport's own readers
 * of it: the fast path of plain pages (server/api/event-page.ts) and the SSE lease (event-stream.ts).
 */
import { z } from 'zod';
import { EVENT_TYPE_PATTERN_SOURCE, pageLimit, queryInteger } from '../../schemas';

export const eventPageInput = z.strictObject({
  cursor: z
    .string()
    .max(128)
    .meta({ description: 'Opaque: meta.nextCursor of the previous page, passed unchanged. Omit to read from the first event.' })
    .optional(),
  limit: pageLimit(),
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
  lease_ms: queryInteger({ min: 1, max: 300_000 }).optional().meta({ description: 'sse: lease length, 1 to 300000 ms, default 30000.' }),
  poll_ms: queryInteger({ min: 1, max: 10_000 })
    .optional()
    .meta({ description: 'sse: how often to look for new events when no commit wake-up arrives, 1 to 10000 ms, default 1000.' }),
});
