/** GET /events/stream: the workspace's accepted events in cursor order (JSON pages). */
import { z } from 'zod';
import { readEventPage } from '@/server/ledger/page';
import { readEvents } from '@/server/ledger/read';
import { AppError } from '@/server/errors';
import { apiKeyProcedure } from '../../trpc';
import { apiMeta, ledgerEventSchema } from '../../schemas';
import { eventPageInput } from './input';

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

export const listProcedure = apiKeyProcedure
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
    if (!page) {
      throw new AppError('invalid_cursor', 'This cursor was not issued by this service for your workspace.', { fields: ['query.cursor'] });
    }
    return page;
  });
