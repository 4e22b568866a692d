/**
 * The service's metrics, in the Prometheus text format (prom-client): what an operator watches and
 * alerts on (docs/operators.md, "Metrics"). scripts/serve.mjs serves them at GET /metrics on a listener of
 * their own, only when METRICS_PORT is set (bound to METRICS_HOST, 127.0.0.1 by default): they are
 * for the operator's scraper, never for the API's clients.
 *
 * Every label has a bounded set of values: an operation is its route template (`GET /tasks/{id}`),
 * never a raw path; a status is a number; a job or a refusal is one of a fixed few.
 *
 * The registry lives on globalThis: Next.js may load this module in more than one of its chunks
 * (instrumentation, route handlers), and every copy must count into the same metrics.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PoolStats } from '@/db';
import { describeError, log } from './log';

/** What a refusal was for: the few reasons a request is turned away before it is served. */
export type Refusal =
  | 'api_rate_limit'
  | 'validator_rate_limit'
  | 'event_stream_leases'
  | 'waiter_capacity'
  | 'mcp_sessions'
  | 'sign_in_locked'
  | 'sign_in_failed'
  | 'link_attempts_locked'
  | 'session_rate_limit';

/** An endpoint behind, and the age of the oldest event it has not been delivered. */
export interface DeliveryLag {
  endpointId: string;
  seconds: number;
}

function build() {
  const registry = new Registry();
  // Read at each scrape from where the leases are (server/api/event-stream.ts; countLeasesWith).
  const leases = { count: () => 0 };
  // Read at each scrape from the database (server/jobs.ts; measureDeliveryLagWith).
  const lag = { read: async (): Promise<DeliveryLag[]> => [] };
  // Read at each scrape from the database (server/jobs.ts; measureTreeAlarmsWith).
  const alarms = { count: async (): Promise<number> => 0 };
  // Read at each scrape from the database (server/jobs.ts; measureArtifactStorageWith).
  const artifactStorage = { read: async (): Promise<{ total: number; largest: number }> => ({ total: 0, largest: 0 }) };
  // Read at each scrape from the pool (PostgreSQL; server/boot.ts, measurePoolWith).
  const pool: { read: (() => PoolStats) | undefined } = { read: undefined };
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: 'aws_http_requests_total',
      help: 'API requests answered, by operation (route template) and status.',
      labelNames: ['operation', 'status'] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'aws_http_request_duration_seconds',
      help: 'Time from a request to its answer (for an event stream, to its first byte), by operation.',
      labelNames: ['operation'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    ledgerAppends: new Counter({
      name: 'aws_ledger_appends_total',
      help: 'Appends committed to the ledger (one per write that changed something).',
      registers,
    }),
    ledgerEvents: new Counter({
      name: 'aws_ledger_events_appended_total',
      help: 'Ledger events committed.',
      registers,
    }),
    refusals: new Counter({
      name: 'aws_refusals_total',
      help: 'Requests turned away by a limit: the API key rate limit, the public validator limit, a signed-in person’s writes a minute, event-stream leases per key, sign-in, invitation and setup links.',
      labelNames: ['reason'] as const,
      registers,
    }),
    jobSuccess: new Gauge({
      name: 'aws_job_last_success_timestamp_seconds',
      help: 'When each background job last finished without an error (Unix seconds).',
      labelNames: ['job'] as const,
      registers,
    }),
    retentionDeleted: new Counter({
      name: 'aws_retention_deleted_total',
      help: 'Rows the retention job deleted, by table: expired idempotency records, ended dedup claims, ended rate-limit windows and attempt counters, old webhook delivery attempts.',
      labelNames: ['table'] as const,
      registers,
    }),
    runLeasesLapsed: new Counter({
      name: 'aws_run_leases_lapsed_total',
      help: 'Runs the service failed because their lease lapsed (their agent stopped heartbeating); each task was made ready again.',
      registers,
    }),
    lag,
    alarms,
    deliveries: new Counter({
      name: 'aws_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (succeeded: a 2xx answer; failed: any other answer, or none).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    deliveryLag: new Gauge({
      name: 'aws_webhook_delivery_lag_seconds',
      help: 'Age of the oldest event not yet delivered, for each enabled endpoint that is behind (at most 100, the furthest behind).',
      labelNames: ['endpoint'] as const,
      registers,
      async collect() {
        this.reset();
        // A database that cannot answer leaves this one out; the rest of the scrape still comes.
        const behind = await lag.read().catch((err: unknown) => {
          log('warn', 'delivery lag not measured', { error: describeError(err) });
          return [];
        });
        for (const b of behind) this.set({ endpoint: b.endpointId }, b.seconds);
      },
    }),
    treeAlarms: new Gauge({
      name: 'aws_ledger_tree_alarms',
      help: 'Workspaces whose Merkle tree is on alarm: their events no longer match it, and no checkpoint is signed until an operator rebuilds it.',
      registers,
      async collect() {
        this.set(
          await alarms.count().catch((err: unknown) => {
            log('warn', 'ledger tree alarms not counted', { error: describeError(err) });
            return 0;
          }),
        );
      },
    }),
    artifactStorage,
    artifactBytes: new Gauge({
      name: 'aws_artifact_content_bytes',
      help: 'Stored artifact content (the bytes counted against ARTIFACT_QUOTA_BYTES): all workspaces together (total), and the most one workspace holds (largest_workspace).',
      labelNames: ['measure'] as const,
      registers,
      async collect() {
        const read = await artifactStorage.read().catch((err: unknown) => {
          log('warn', 'artifact storage not measured', { error: describeError(err) });
          return null;
        });
        if (!read) return;
        this.set({ measure: 'total' }, read.total);
        this.set({ measure: 'largest_workspace' }, read.largest);
      },
    }),
    passwordHashing: new Counter({
      name: 'aws_password_hashing_total',
      help: 'Argon2id computations (about 20 ms of CPU and 19 MiB each): hash (a new password) and verify (a sign-in or a password check).',
      labelNames: ['operation'] as const,
      registers,
    }),
    dbErrors: new Counter({
      name: 'aws_db_errors_total',
      help: 'Database errors that reached a request (failed it, or answered it 503), by SQLSTATE class (08 connection, 57 operator intervention, 40 rollback, …).',
      labelNames: ['class'] as const,
      registers,
    }),
    pool,
    poolConnections: new Gauge({
      name: 'aws_db_pool_connections',
      help: 'The database connection pool (PostgreSQL): its size (max), and connections idle, in use and opening.',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const stats = pool.read?.();
        if (!stats) return;
        this.set({ state: 'max' }, stats.max);
        this.set({ state: 'idle' }, stats.idle);
        this.set({ state: 'in_use' }, stats.inUse);
        this.set({ state: 'connecting' }, stats.connecting);
      },
    }),
    poolWaiting: new Gauge({
      name: 'aws_db_pool_waiting',
      help: 'Queries and transactions waiting for a connection of the pool (PostgreSQL).',
      registers,
      collect() {
        const stats = pool.read?.();
        if (stats) this.set(stats.waiting);
      },
    }),
    leases,
    leasesOpen: new Gauge({
      name: 'aws_event_stream_leases_open',
      help: 'Server-sent event leases open on this instance.',
      registers,
      collect() {
        this.set(leases.count());
      },
    }),
  };
}

type Metrics = ReturnType<typeof build>;
const key = Symbol.for('accountable-work-service.metrics');
function metrics(): Metrics {
  const g = globalThis as typeof globalThis & { [key]?: Metrics };
  g[key] ??= build();
  return g[key];
}

/** An API request answered: its operation (`METHOD /template`, or `unmatched`), status and duration. */
export function countRequest(operation: string, status: number, seconds: number): void {
  const m = metrics();
  m.httpRequests.inc({ operation, status: String(status) });
  m.httpDuration.observe({ operation }, seconds);
}

/** Appends that committed, and the events they wrote. */
export function countAppended(appends: number, events: number): void {
  const m = metrics();
  m.ledgerAppends.inc(appends);
  m.ledgerEvents.inc(events);
}

export function countRefusal(reason: Refusal): void {
  metrics().refusals.inc({ reason });
}

export function countPasswordHashing(operation: 'hash' | 'verify'): void {
  metrics().passwordHashing.inc({ operation });
}

export function countDelivery(outcome: 'succeeded' | 'failed'): void {
  metrics().deliveries.inc({ outcome });
}

/** A database error that reached a request: its SQLSTATE's class (its first two characters). */
export function countDbError(sqlState: string): void {
  metrics().dbErrors.inc({ class: sqlState.slice(0, 2) });
}

/** How the delivery lag is read at each scrape (server/jobs.ts gives a query on the runtime's database). */
export function measureDeliveryLagWith(read: () => Promise<DeliveryLag[]>): void {
  metrics().lag.read = read;
}

/** How the trees on alarm are counted at each scrape (server/jobs.ts gives a query on the runtime's database). */
export function measureTreeAlarmsWith(count: () => Promise<number>): void {
  metrics().alarms.count = count;
}

/** How the stored artifact content is measured at each scrape (server/jobs.ts gives a query on the runtime's database). */
export function measureArtifactStorageWith(read: () => Promise<{ total: number; largest: number }>): void {
  metrics().artifactStorage.read = read;
}

/** How the pool's state is read at each scrape (PostgreSQL only). */
export function measurePoolWith(read: () => PoolStats): void {
  metrics().pool.read = read;
}

/** A background job finished without an error now. */
export function jobSucceeded(job: string): void {
  metrics().jobSuccess.set({ job }, Date.now() / 1000);
}

/** The retention job deleted `rows` rows of `table`. */
export function countRetained(table: string, rows: number): void {
  if (rows > 0) metrics().retentionDeleted.inc({ table }, rows);
}

/** The lease-expiry job failed a run whose lease lapsed. */
export function countLapsedLease(): void {
  metrics().runLeasesLapsed.inc();
}

/** Where the open leases are counted (server/api/event-stream.ts): read at each scrape. */
export function countLeasesWith(count: () => number): void {
  metrics().leases.count = count;
}

/** The metrics as GET /metrics answers them: the text, and its content type. */
export async function metricsText(): Promise<{ contentType: string; text: string }> {
  const { registry } = metrics();
  return { contentType: registry.contentType, text: await registry.metrics() };
}
