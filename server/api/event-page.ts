/**
 * GET /events/stream in its JSON form, served straight from ledger text for a plainly valid request.
 *
 * The events.list procedure (routers/events/list.ts) defines this operation: its input, its output and
 * its errors. Served through the procedure, a page of 100 events is parsed from the database into
 * objects, checked against the output schema and serialised again, which made a page ~9 ms where
 * the read itself is ~2 ms (bench/; docs/contract.md §14). Pollers page the ledger all the time, so the
 * transport serves a request that has nothing to refuse (a valid key, a query the procedure's own
 * schema accepts, a cursor this service issued, no trace headers to check) from `readEventsJson`,
 * with the same body the procedure returns. Anything else goes on to the procedure, so every error
 * still comes from the procedure itself. test/api/events.int.test.ts holds the two paths to the
 * same pages.
 */
import { readEventPage } from '@/server/ledger/page';
import { readEventsJson } from '@/server/ledger/read';
import type { Runtime } from '@/server/runtime';
import type { Answer, ApiRequest } from '@/server/http/exchange';
import type { PresentedKey } from './api-key-auth';
import { queryInput } from './query-input';
import { eventPageInput } from './routers/events';

/** Parameters of the events query given as lists however often they are repeated. */
export const EVENT_LIST_PARAMS: ReadonlySet<string> = new Set(['type']);

/** The page as the procedure would answer it, or null when the request must go to the procedure. */
export async function serveEventPage(request: ApiRequest, runtime: Runtime, presented: PresentedKey | null): Promise<Answer | null> {
  const key = presented?.key;
  if (!key) return null;
  if (request.headers.get('x-correlation-id') !== null || request.headers.get('x-context-manifest-digest') !== null) return null;
  const parsed = eventPageInput.safeParse(queryInput(request.url, EVENT_LIST_PARAMS));
  if (!parsed.success) return null;
  const input = parsed.data;
  if (
    input.format !== 'json' ||
    input.last_event_id !== undefined ||
    input.lease_ms !== undefined ||
    input.poll_ms !== undefined ||
    (input.workspace_id !== undefined && input.workspace_id.toLowerCase() !== key.workspaceId)
  ) {
    return null;
  }
  const page = await readEventPage(runtime.secrets.cursor, key.workspaceId, input, (after, limit) =>
    readEventsJson(runtime.db, key.workspaceId, { after, limit, types: input.type }),
  );
  if (!page) return null;
  return {
    status: 200,
    headers: { 'Content-Type': 'application/json' },
    body: `{"data":[${page.data.map((e) => e.json).join(',')}],"meta":${JSON.stringify(page.meta)}}`,
  };
}
