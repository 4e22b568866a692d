/**
 * Room for one more long-lived waiter (an event-stream lease, an MCP session or wait): each holds
 * memory for as long as it is open, and enough of them at once would take the heap to its cap
 * (SERVER_HEAP_MB) and the process down with every request in it. Past WAITERS_HEAP_PERCENT of
 * the heap's limit a new one is refused with 503 and Retry-After, for the client to retry here
 * later or elsewhere; what is open goes on, and so do ordinary requests.
 */
import { getHeapStatistics } from 'node:v8';
import { AppError } from './errors';
import { countRefusal } from './metrics';

/** Seconds a refused waiter is asked to wait before it tries again. */
const RETRY_AFTER_SECONDS = 5;

/** Throws 503 service_unavailable when the heap is past `percent` of its limit. */
export function admitWaiter(percent: number): void {
  const { used_heap_size: used, heap_size_limit: limit } = getHeapStatistics();
  if (used <= (limit * percent) / 100) return;
  countRefusal('waiter_capacity');
  throw new AppError(
    'service_unavailable',
    'This instance holds as many open streams and waits as its memory allows; retry shortly, or on another instance.',
    { scope: 'waiters' },
    { retryAfter: RETRY_AFTER_SECONDS },
  );
}
