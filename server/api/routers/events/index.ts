/**
 * The event stream: GET /events/stream as JSON pages (list.ts); its SSE form is served by the
 * transport (server/api/event-stream.ts), which reads the same query (input.ts).
 */
import { router } from '../../trpc';
import { listProcedure } from './list';

export { eventPageInput } from './input';

export const eventsRouter = router({
  list: listProcedure,
});
