/**
 * GET /api/v1/events/stream?format=sse: a bounded Server-Sent Events lease over the workspace's
 * ledger. It replays from the position given (Last-Event-ID header, else `last_event_id`, else
 * `cursor`: a reconnecting EventSource sends the header with the original URL, so the header wins),
 * sends each event as `id: <cursor>` / `event: <eventType>` / `data: <the ledger event>`, waits for
 * the ledger to move (a wake-up on commit, else a poll every `poll_ms`), sends `: keepalive`
 * comments, and ends with `event: lease_end` carrying the next cursor. A revoked key ends its leases
 * at the next wake-up or poll. The JSON form of the same path is the tRPC procedure events.list.
 */
import { z } from 'zod';
import { and, eq, isNotNull } from 'drizzle-orm';
import { apiKeys } from '@/db/schema';
import { authenticateApiKey } from '@/server/auth/api-keys';
import { AppError } from '@/server/errors';
import { decodeCursor, encodeCursor } from '@/server/ledger/cursor';
import { readEvents } from '@/server/ledger/read';
import type { Runtime } from '@/server/runtime';
import { EVENT_TYPE_PATTERN_SOURCE } from './schemas';

/** The query of an SSE lease (the JSON form's query plus the lease's own settings). */
export const sseQuery = z.strictObject({
  format: z.literal('sse'),
  cursor: z.string().max(128).optional(),
  last_event_id: z.string().max(128).optional(),
  type: z
    .array(z.string().regex(new RegExp(EVENT_TYPE_PATTERN_SOURCE)))
    .max(20)
    .optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  lease_ms: z.coerce.number().int().min(1).max(300_000).default(30_000),
  poll_ms: z.coerce.number().int().min(1).max(10_000).default(1000),
});

const BATCH = 100;

function queryObject(url: URL): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    out[key] = key === 'type' ? values : values[values.length - 1];
  }
  return out;
}

/** Validates the request and opens the lease; errors before the first byte are ordinary API errors. */
export async function serveEventStream(request: Request, url: URL, runtime: Runtime): Promise<Response> {
  const token = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '')?.[1];
  if (!token) throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>.');
  const key = await authenticateApiKey(runtime.db, token);
  if (!key) throw new AppError('unauthorized', 'The API key is unknown or revoked.');

  const raw = queryObject(url);
  const parsed = sseQuery.safeParse(raw);
  if (!parsed.success) {
    const unknown = parsed.error.issues.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : []));
    if (unknown.length > 0) {
      throw new AppError('unknown_field', `Unknown query parameters: ${unknown.join(', ')}.`, { fields: unknown.map((k) => `query.${k}`) });
    }
    const issues = parsed.error.issues.map((i) => ({ path: `query.${i.path.join('.')}`, message: i.message }));
    throw new AppError('validation_failed', 'Invalid query parameters.', { issues });
  }
  const q = parsed.data;
  const secret = runtime.secrets.cursor;
  const workspaceId = key.workspaceId;
  const given = request.headers.get('last-event-id') ?? q.last_event_id ?? q.cursor;
  let after = 0;
  if (given !== undefined && given !== '') {
    const position = decodeCursor(secret, workspaceId, given);
    if (!position)
      throw new AppError('invalid_cursor', 'This cursor (or Last-Event-ID) was not issued by this service for your workspace.');
    after = position.sequence;
  }

  const encoder = new TextEncoder();
  const keepaliveMs = runtime.env.SSE_KEEPALIVE_MS;
  let stop: (() => void) | null = null;
  let closed = false;

  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => {
        if (!closed) controller.enqueue(encoder.encode(text));
      };
      const deadline = Date.now() + q.lease_ms;
      let lastSent = Date.now();
      let woken = false;
      let wake: (() => void) | null = null;
      const unsubscribe = runtime.wakeups.subscribe(workspaceId, () => {
        woken = true;
        wake?.();
      });
      stop = () => {
        closed = true;
        wake?.();
      };
      request.signal?.addEventListener('abort', () => stop?.());
      try {
        send(`retry: ${Math.min(q.poll_ms, 1000)}\n\n`);
        while (!closed && Date.now() < deadline) {
          woken = false;
          let rows = await readEvents(runtime.db, workspaceId, { after, limit: BATCH, types: q.type });
          while (rows.length > 0 && !closed) {
            for (const event of rows) {
              after = event.sequence;
              send(
                `id: ${encodeCursor(secret, workspaceId, event.sequence)}\nevent: ${event.eventType}\ndata: ${JSON.stringify(event)}\n\n`,
              );
            }
            lastSent = Date.now();
            if (rows.length < BATCH || Date.now() >= deadline) break;
            rows = await readEvents(runtime.db, workspaceId, { after, limit: BATCH, types: q.type });
          }
          if (await revoked(runtime, key.keyId)) break;
          if (woken || closed) continue;
          const until = Math.min(deadline, Date.now() + q.poll_ms, lastSent + keepaliveMs);
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.max(0, until - Date.now()));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = null;
          if (!woken && Date.now() >= lastSent + keepaliveMs && Date.now() < deadline) {
            send(': keepalive\n\n');
            lastSent = Date.now();
          }
        }
        send(`event: lease_end\ndata: ${JSON.stringify({ nextCursor: encodeCursor(secret, workspaceId, after) })}\n\n`);
      } catch {
        // The database failed mid-lease: end it; the client resumes from the last id it received.
      } finally {
        unsubscribe();
        if (!closed) {
          closed = true;
          controller.close();
        }
      }
    },
    cancel() {
      stop?.();
    },
  });

  return new Response(stream, {
    status: 200,
    headers: {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    },
  });
}

async function revoked(runtime: Runtime, keyId: string): Promise<boolean> {
  const [row] = await runtime.db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.id, keyId), isNotNull(apiKeys.revokedAt)));
  return Boolean(row);
}
