/**
 * Stopping the service in order, on SIGINT or SIGTERM (or when the launcher that started this
 * process goes away): first what serves requests, then what they need.
 *
 * 1. `requests`: stop taking connections, end event-stream leases with `lease_end`, let requests
 *    in flight finish (scripts/serve.mjs through server/http/node-api.ts).
 * 2. `resources`: background jobs, then the database (server/boot.ts). PGlite must close its
 *    files cleanly, and nothing may still be writing when it does.
 *
 * The hooks live on globalThis: Next.js may load this module in more than one of its chunks
 * (instrumentation, route handlers), and every copy must share one list.
 */
import { describeError, log } from './log';

type Hook = () => Promise<void>;
const PHASES = ['requests', 'resources'] as const;
export type StopPhase = (typeof PHASES)[number];

interface Registry {
  hooks: Record<StopPhase, Hook[]>;
  stopping: Promise<void> | null;
}

const key = Symbol.for('accountable-work-service.lifecycle');
type GlobalWithRegistry = typeof globalThis & { [key]?: Registry };

function registry(): Registry {
  const g = globalThis as GlobalWithRegistry;
  g[key] ??= { hooks: { requests: [], resources: [] }, stopping: null };
  return g[key];
}

/** Runs `hook` when the service stops, in `phase` (hooks of one phase run together). */
export function onStop(phase: StopPhase, hook: Hook): void {
  registry().hooks[phase].push(hook);
}

/**
 * True once the service has begun to stop: GET /api/v1/ready answers 503 from then on, so a load
 * balancer sends new requests elsewhere while this instance finishes its own.
 */
export function isStopping(): boolean {
  return registry().stopping !== null;
}

/** Runs every phase in order, once however often it is called; a failing hook does not stop the others. */
function stopService(): Promise<void> {
  const r = registry();
  r.stopping ??= (async () => {
    for (const phase of PHASES) {
      const results = await Promise.allSettled(r.hooks[phase].map((hook) => hook()));
      for (const result of results) {
        if (result.status === 'rejected') log('error', `stopping (${phase}) failed`, { error: describeError(result.reason) });
      }
    }
  })();
  return r.stopping;
}

/** Longest a stop may take before the process exits anyway (the launcher's promise is 10 s). */
const STOP_DEADLINE_MS = 9_500;

/**
 * Stops the service and exits on SIGINT or SIGTERM: 0 when everything stopped in time, 1 when a
 * hook was still running at the deadline. A second signal while stopping changes nothing (Ctrl-C
 * reaches both the launcher and this process, and the launcher forwards it too).
 */
export function stopOnSignals(): void {
  let started = false;
  const stop = (why: string) => {
    if (started) return;
    started = true;
    process.stdout.write(`\n  Stopping (${why}): finishing requests in flight, ending event-stream leases…\n`);
    const watchdog = setTimeout(() => {
      log('error', 'stopping took too long; exiting anyway', { deadlineMs: STOP_DEADLINE_MS });
      process.exit(1);
    }, STOP_DEADLINE_MS);
    watchdog.unref();
    void stopService().then(() => {
      process.stdout.write('  Stopped.\n');
      process.exit(0);
    });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop(signal));
  // Started by scripts/start.mjs with an IPC channel: the channel closes when the launcher is gone,
  // however it went (killed outright, or its terminal closed), and the server must not outlive it.
  if (process.send) process.on('disconnect', () => stop('launcher gone'));
}
