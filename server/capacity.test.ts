/**
 * Admission of waiters by the heap the last full collection left, not the heap in use: garbage
 * alone does not refuse a waiter, live memory does.
 */
import { setFlagsFromString, getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { AppError } from './errors';
import { admitWaiter } from './capacity';

// A full collection on demand (the test's own process; the server never forces one).
setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;
/** Lets the collection's performance entry reach the observer. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

const percentOf = (bytes: number) => (bytes / getHeapStatistics().heap_size_limit) * 100;
const refused = (percent: number) => {
  try {
    admitWaiter(percent);
    return false;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('service_unavailable');
    return true;
  }
};

it('admits while the heap in use is garbage above the threshold, and refuses once live memory is above it', async () => {
  admitWaiter(100); // starts watching full collections
  fullGc();
  await settle();
  const live = getHeapStatistics().used_heap_size;

  // 64 MB of garbage: arrays big enough to go straight to the old generation, dropped at once.
  let garbage: number[][] | null = Array.from({ length: 64 }, () => new Array<number>(128 * 1024).fill(1.5));
  garbage = null;
  expect(garbage).toBeNull();
  const used = getHeapStatistics().used_heap_size;
  expect(used - live).toBeGreaterThan(48 * 1024 * 1024);
  // The threshold sits between what is live and what is in use.
  const threshold = percentOf(live + 24 * 1024 * 1024);
  expect(refused(threshold)).toBe(false);

  // Now as much is live, and a full collection has seen it.
  const kept = Array.from({ length: 64 }, () => new Array<number>(128 * 1024).fill(2.5));
  fullGc();
  await settle();
  expect(refused(threshold)).toBe(true);
  expect(kept).toHaveLength(64);
});
