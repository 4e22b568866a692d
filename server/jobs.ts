/** Work the service does on its own: timing out overdue decisions every few seconds. */
import { sweepDecisionTimeouts } from './domain/decisions/timeouts';
import { log } from './log';
import type { Runtime } from './runtime';

/** How often overdue decisions are timed out (reads of a decision also do it for what they show). */
export const TIMEOUT_SWEEP_MS = 5_000;

/** Starts the background jobs; returns a function that stops them. */
export function startBackgroundJobs(runtime: Runtime, opts: { sweepMs?: number } = {}): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return; // a slow sweep is never overlapped by the next one
    running = true;
    sweepDecisionTimeouts(runtime.db)
      .catch((err: unknown) => log('warn', 'decision timeout sweep failed', { error: String(err) }))
      .finally(() => {
        running = false;
      });
  }, opts.sweepMs ?? TIMEOUT_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}
