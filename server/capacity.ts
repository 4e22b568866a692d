/**
 * Room for one more long-lived waiter (an event-stream lease, an MCP session or wait): each holds
 * memory for as long as it is open, and enough of them at once would take the heap to its cap
 * (SERVER_HEAP_MB) and the process down with every request in it. Past WAITERS_HEAP_PERCENT of
 * the heap's limit a new one is refused with 503 and Retry-After, for the client to retry here
 * later or elsewhere; what is open goes on, and so do ordinary requests.
 *
 * What counts is the heap the last full collection left (what is live), not the heap in use now:
 * between two full collections the heap also holds the garbage of every request since, and V8 lets
 * it grow well past what is live before it collects (scripts/server-flags.mjs). Judged by the heap
 * in use, an instance refused waiters while most of its heap was garbage (bench --only waiters:
 * 7,000–8,600 of 10,000 admitted). A new waiter is refused only when both say the heap is full.
 */
import { getHeapStatistics } from 'node:v8';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { AppError } from './errors';
import { countRefusal } from './metrics';

/** Seconds a refused waiter is asked to wait before it tries again. */
const RETRY_AFTER_SECONDS = 5;

/** The heap in use just after the last full (mark-compact) collection; null before the first is seen. */
let liveAfterFullGc: number | null = null;
let observer: PerformanceObserver | null = null;

/** Watches full collections from the first waiter on (a process that never holds one pays nothing). */
function watchFullCollections(): void {
  observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        liveAfterFullGc = getHeapStatistics().used_heap_size;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
}

/** Throws 503 service_unavailable when the heap is past `percent` of its limit. */
export function admitWaiter(percent: number): void {
  if (!observer) watchFullCollections();
  const { used_heap_size: used, heap_size_limit: limit } = getHeapStatistics();
  const threshold = (limit * percent) / 100;
  if (used <= threshold || (liveAfterFullGc !== null && liveAfterFullGc <= threshold)) return;
  countRefusal('waiter_capacity');
  throw new AppError(
    'service_unavailable',
    'This instance holds as many open streams and waits as its memory allows; retry shortly, or on another instance.',
    { scope: 'waiters' },
    { retryAfter: RETRY_AFTER_SECONDS },
  );
}
