/**
 * GET /api/v1/events/stream?format=sse: a bounded Server-Sent Events lease over the workspace's
 * ledger. It replays from the position given (Last-Event-ID header, else `last_event_id`, else
 * `cursor`: a reconnecting EventSource sends the header with the original URL, so the header wins),
 * sends each event as `id: <cursor>` / `event: <eventType>` / `data: <the ledger event>`, waits for
 * the ledger to move, sends `: keepalive` comments, and ends with `event: lease_end` carrying the
 * next cursor. The JSON form of the same path is the tRPC procedure events.list; a plainly valid
 * page of it is served straight from ledger text by server/api/event-page.ts.
 *
 * This file checks the request and opens the lease; the lease itself (its connection's state and
 * loop) is server/api/event-lease.ts. Waiting costs no query: the open leases of a workspace share
 * one feed (server/ledger/feed.ts) that reads only when a commit wakes it (server/ledger/wake.ts)
 * and pushes what it read to each lease; it polls every `poll_ms` only while the wake-ups are not
 * healthy (PostgreSQL's LISTEN connection down). A revoked key ends its leases when the feed reads
 * the `api_key.revoked` event (the revocation's own commit wakes it); keepalives are timers.
 */
import { z } from 'zod';
import { admitWaiter } from '@/server/capacity';
import { AppError } from '@/server/errors';
import { decodeCursor } from '@/server/ledger/cursor';
import { hubOf } from '@/server/ledger/feed';
import type { Runtime } from '@/server/runtime';
import type { PresentedKey } from './api-key-auth';
import { createApiContext } from './context';
import { EventLease } from './event-lease';
import { EVENT_LIST_PARAMS } from './event-page';
import { queryInput } from './query-input';
import { queryIntegerOr } from './schemas';
import type { Answer, ApiRequest } from '@/server/http/exchange';
import { eventPageInput } from './routers/events';
import { principalOf, type Principal } from './trpc';
import { countLeasesWith, countRefusal } from '@/server/metrics';

/** The query of an SSE lease: the JSON form's (events.list), with the lease's own settings defaulted. */
const sseQuery = eventPageInput.extend({
  format: z.literal('sse'),
  lease_ms: queryIntegerOr(30_000, { min: 1, max: 300_000 }),
  poll_ms: queryIntegerOr(1000, { min: 1, max: 10_000 }),
});

/** Validates the request and opens the lease; errors before the first byte are ordinary API errors. */
export async function serveEventStream(request: ApiRequest, runtime: Runtime, presented: PresentedKey | null): Promise<Answer> {
  // The caller, resolved as the procedures resolve it (events.list among them): the same errors,
  // and the key the transport has already resolved and counted is not looked up again.
  const context = createApiContext(runtime, {
    transport: 'rest',
    method: request.method,
    url: request.url,
    headers: request.headers,
    presentedKey: presented,
  });
  const reader = await principalOf(context, 'query');

  const raw = queryInput(request.url, EVENT_LIST_PARAMS);
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
  const workspaceId = workspaceOf(reader, q.workspace_id?.toLowerCase());
  // Where to start: the Last-Event-ID header, else last_event_id, else cursor (a reconnecting
  // EventSource resends the original URL with the header, so the header wins). Every one given is
  // checked, not only the one used: a forged or foreign cursor is refused wherever it stands. An
  // empty one counts as not given.
  const given = [
    ['Last-Event-ID', request.headers.get('last-event-id')],
    ['last_event_id', q.last_event_id],
    ['cursor', q.cursor],
  ] as const;
  let first: number | undefined;
  for (const [name, value] of given) {
    if (value === null || value === undefined || value === '') continue;
    const position = decodeCursor(secret, workspaceId, value);
    if (!position)
      throw new AppError('invalid_cursor', `This ${name} was not issued by this service for your workspace.`, {
        fields: [name === 'Last-Event-ID' ? 'header.last-event-id' : `query.${name}`],
      });
    first ??= position.sequence;
  }

  // Admitted last, so a request refused for its input does not count; released when the lease ends.
  admitWaiter(runtime.env.WAITERS_HEAP_PERCENT);
  const hub = hubOf(runtime);
  const deadline = Date.now() + q.lease_ms;
  const place = hub.admit(reader.kind === 'api_key' ? reader.keyId : `user:${reader.userId}`, deadline, runtime.env.SSE_LEASES_PER_KEY);
  if ('retryAfterMs' in place) {
    countRefusal('event_stream_leases');
    const retryAfter = Math.max(1, Math.ceil(place.retryAfterMs / 1000));
    throw new AppError(
      'rate_limited',
      `${reader.kind === 'api_key' ? 'This key already holds' : 'You already hold'} ${runtime.env.SSE_LEASES_PER_KEY} open ` +
        'event-stream leases on this instance; wait for one to end (Retry-After) or close one.',
      { limit: runtime.env.SSE_LEASES_PER_KEY, scope: 'event_stream_leases' },
      { retryAfter },
    );
  }

  const lease = new EventLease(runtime, hub, place, reader, {
    workspaceId,
    after: first ?? 0,
    deadline,
    types: q.type,
    pollMs: q.poll_ms,
  });
  openLeases.add(lease);
  void lease.done.then(() => openLeases.delete(lease));
  return {
    status: 200,
    headers: {
      ...(presented?.headers ?? {}),
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    },
    stream: lease,
  };
}

/** The workspace the lease reads: the key's (workspace_id, if sent, must name it), or the human's choice. */
function workspaceOf(reader: Principal, named: string | undefined): string {
  if (reader.kind === 'api_key') {
    if (named !== undefined && named !== reader.workspaceId) throw new AppError('forbidden', 'This API key belongs to another workspace.');
    return reader.workspaceId;
  }
  const memberOf = reader.memberships.map((m) => m.workspaceId);
  const workspaceId = named ?? memberOf[0];
  if (!workspaceId || !memberOf.includes(workspaceId)) throw new AppError('forbidden', 'You are not a member of that workspace.');
  return workspaceId;
}

/** The leases open in this process (endEventStreams ends them; the metrics count them). */
const openLeases = new Set<EventLease>();
countLeasesWith(() => openLeases.size);

/**
 * Ends every open lease of this process with lease_end (the service is stopping): each client gets
 * the cursor to resume from, from this instance's successor or another one. Settles when all have
 * sent it. A lease opened after this call is not ended by it: the caller stops taking requests first.
 */
export async function endEventStreams(): Promise<number> {
  const leases = [...openLeases];
  for (const lease of leases) lease.end();
  await Promise.all(leases.map((l) => l.done));
  return leases.length;
}
