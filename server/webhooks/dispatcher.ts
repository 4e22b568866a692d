/**
 * Delivering the ledger to webhook endpoints: at least once, in sequence order per endpoint.
 *
 * Each endpoint's outbox is its cursor into the ledger (db/schema/webhooks.ts). An instance takes
 * an endpoint that has events after its cursor and is due (a lease on the row, taken with
 * SKIP LOCKED, so several instances on one PostgreSQL never deliver to one endpoint at once), then
 * delivers the events after the cursor one at a time:
 *
 * - a 2xx answer records the attempt and moves the cursor past the event, in one statement that
 *   also renews the lease (and fails if the lease was lost: the instance stops there);
 * - anything else, or no answer within WEBHOOK_TIMEOUT_MS, records the attempt, schedules the
 *   next one with exponential backoff and jitter, and lets the endpoint go; once the event has
 *   failed for WEBHOOK_RETRY_FOR_MS the endpoint is disabled and `webhook_endpoint.disabled`
 *   appended, in one transaction.
 *
 * An instance that dies mid-delivery holds its lease until it runs out; then another (or its
 * successor) takes the endpoint and sends the same event again, with the same webhook-id, so a
 * receiver can drop the repeat. Stopping cleanly aborts requests in flight and gives leases back.
 *
 * Commits wake the dispatcher for workspaces that have endpoints (server/ledger/wake.ts, which also
 * carries other instances' commits); a poll every WEBHOOK_POLL_MS finds due retries.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { and, eq, sql } from 'drizzle-orm';
import { query } from '@/db';
import { webhookEndpoints } from '@/db/schema';
import { systemActor } from '@/server/domain/decisions/timeouts';
import { subscribes } from '@/server/domain/webhooks/endpoints';
import { appendEvents } from '@/server/ledger/append';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { readEvents } from '@/server/ledger/read';
import { describeError, log } from '@/server/log';
import type { Runtime } from '@/server/runtime';
import { decryptSecret, signatureHeader } from './secrets';
import { deliveryAgents } from './url-policy';
import { countDelivery, jobSucceeded } from '@/server/metrics';
import { plural } from '@/server/words';

type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** Events read from an endpoint's cursor at a time. */
const BATCH = 50;
/** Endpoints one instance delivers to at once. */
const CONCURRENCY = 8;
/** Characters of a receiver's answer kept with the attempt. */
const EXCERPT_CHARS = 1000;
/** Retries never wait longer than this, so a receiver that comes back is heard from within the hour. */
const MAX_DELAY_MS = 3_600_000;

/** The delay before attempt `failures + 1`: doubling from `baseMs`, capped, with "equal jitter" (half fixed, half random). */
export function retryDelay(baseMs: number, failures: number, random: () => number = Math.random): number {
  const exp = Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

interface Outcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  excerpt: string | null;
  durationMs: number;
  /** Cut short because the service is stopping: not recorded, delivered again later. */
  aborted: boolean;
}

export interface DispatcherOptions {
  /** Overrides WEBHOOK_POLL_MS. */
  pollMs?: number;
}

export class WebhookDispatcher {
  /** Names this instance in the leases it holds. */
  readonly instance = randomUUID();
  private readonly running = new Map<string, Promise<void>>();
  private readonly requests = new Set<http.ClientRequest>();
  private readonly agents;
  /** Workspaces with an enabled endpoint (as of the last poll): only their commits wake the dispatcher. */
  private watched = new Set<string>();
  private ticking = false;
  private again = false;
  private stopped = false;
  private poll: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly runtime: Runtime,
    private readonly opts: DispatcherOptions = {},
  ) {
    this.agents = deliveryAgents(runtime.env.WEBHOOKS_ALLOW_PRIVATE);
  }

  start(): void {
    this.unsubscribe = this.runtime.wakeups.onAnyMove((workspaceId) => {
      if (this.watched.has(workspaceId)) this.kick();
    });
    const every = this.opts.pollMs ?? this.runtime.env.WEBHOOK_POLL_MS;
    const loop = () => {
      if (this.stopped) return;
      void this.refreshWatched()
        .catch((err: unknown) => log('warn', 'webhook dispatcher could not read endpoints', { error: describeError(err) }))
        .finally(() => {
          this.kick();
          if (!this.stopped) {
            this.poll = setTimeout(loop, every);
            this.poll.unref();
          }
        });
    };
    loop();
  }

  /** Aborts deliveries in flight (they are sent again later) and gives the leases back. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.poll) clearTimeout(this.poll);
    for (const request of this.requests) request.destroy(new StoppingError());
    await Promise.allSettled(this.running.values());
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private async refreshWatched(): Promise<void> {
    const rows = await query<{ workspace_id: string }>(
      this.runtime.db,
      sql`select distinct workspace_id from webhook_endpoints where status = 'enabled'`,
    );
    this.watched = new Set(rows.map((r) => r.workspace_id));
  }

  /** Looks for due endpoints now (or once more after the look in progress). */
  kick(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((err: unknown) => log('warn', 'webhook dispatcher could not claim endpoints', { error: describeError(err) }))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async tick(): Promise<void> {
    const room = CONCURRENCY - this.running.size;
    if (room <= 0) return;
    const claimed = await this.claim(room);
    // The claim query ran: the dispatcher is alive and reaching the database.
    jobSucceeded('webhook dispatch');
    for (const row of claimed) {
      const run = this.deliverTo(row)
        .catch((err: unknown) => log('warn', 'webhook delivery failed', { endpointId: row.id, error: describeError(err) }))
        .finally(() => {
          this.running.delete(row.id);
          // A slot is free, and the endpoint may have more (or others may be waiting).
          this.kick();
        });
      this.running.set(row.id, run);
    }
  }

  /**
   * Takes up to `limit` endpoints that are enabled, due, behind their workspace's head and not
   * leased by a live instance: one statement, rows another instance is claiming skipped.
   */
  private async claim(limit: number): Promise<EndpointRow[]> {
    const mine = [...this.running.keys()].join(',');
    const { db, env } = this.runtime;
    return db
      .update(webhookEndpoints)
      .set({ leasedBy: this.instance, leaseUntil: sql`now() + ${env.WEBHOOK_LEASE_MS}::int * interval '1 millisecond'` })
      .where(
        sql`${webhookEndpoints.id} in (
          select e.id from webhook_endpoints e join ledger_heads h on h.workspace_id = e.workspace_id
          where e.status = 'enabled' and e.next_attempt_at <= now() and h.sequence > e.delivered_sequence
            and (e.lease_until is null or e.lease_until < now())
            and e.id <> all(string_to_array(${mine}::text, ',')::uuid[])
          order by e.next_attempt_at
          limit ${limit}::int
          for update of e skip locked)`,
      )
      .returning();
  }

  private async deliverTo(row: EndpointRow): Promise<void> {
    const key = this.runtime.secrets.webhook;
    const secrets = [decryptSecret(key, row.secretCipher)];
    if (row.previousSecretCipher && row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > Date.now()) {
      secrets.push(decryptSecret(key, row.previousSecretCipher));
    }
    let cursor = row.deliveredSequence;
    let failures = row.attempts;
    try {
      for (;;) {
        if (this.stopped) return;
        const events = await readEvents(this.runtime.db, row.workspaceId, { after: cursor, limit: BATCH });
        if (events.length === 0) return;
        let passed = cursor;
        for (const event of events) {
          const forIt =
            event.eventType === 'webhook_endpoint.test' ? event.aggregateId === row.id : subscribes(row.eventTypes, event.eventType);
          if (!forIt) {
            passed = event.sequence;
            continue;
          }
          const outcome = await this.send(row.url, event, secrets);
          if (outcome.aborted) {
            if (passed > cursor) await this.advance(row.id, passed);
            return;
          }
          countDelivery(outcome.ok ? 'succeeded' : 'failed');
          if (!outcome.ok) {
            await this.failed(row, event, outcome, failures + 1, passed);
            return;
          }
          if (!(await this.succeeded(row.id, event, outcome, failures + 1))) return; // the lease was lost
          cursor = passed = event.sequence;
          failures = 0;
        }
        if (passed > cursor) {
          if (!(await this.advance(row.id, passed))) return;
          cursor = passed;
        }
        if (events.length < BATCH) return;
      }
    } finally {
      await query(
        this.runtime.db,
        sql`update webhook_endpoints set leased_by = null, lease_until = null where id = ${row.id} and leased_by = ${this.instance}`,
      ).catch(() => undefined);
    }
  }

  /** Moves the cursor past events the endpoint does not subscribe to. */
  private async advance(endpointId: string, sequence: number): Promise<boolean> {
    const rows = await query(
      this.runtime.db,
      sql`update webhook_endpoints set delivered_sequence = ${sequence}
          where id = ${endpointId} and leased_by = ${this.instance} and delivered_sequence < ${sequence} returning id`,
    );
    return rows.length > 0;
  }

  /** Records the attempt and moves the cursor past the event, renewing the lease: one statement. */
  private async succeeded(endpointId: string, event: LedgerEvent, o: Outcome, attempt: number): Promise<boolean> {
    const rows = await query(
      this.runtime.db,
      sql`with attempt as (
            insert into webhook_deliveries
              (id, endpoint_id, workspace_id, event_id, sequence, event_type, attempt, succeeded, status_code, error, response_excerpt, duration_ms)
            select ${randomUUID()}, ${endpointId}, ${event.workspaceId}, ${event.id}, ${event.sequence}, ${event.eventType},
                   ${attempt}, true, ${o.statusCode}, null, ${o.excerpt}, ${o.durationMs}
            where exists (select 1 from webhook_endpoints where id = ${endpointId}))
          update webhook_endpoints
             set delivered_sequence = ${event.sequence}, attempts = 0, failing_since = null, next_attempt_at = now(),
                 last_success_at = now(), lease_until = now() + ${this.runtime.env.WEBHOOK_LEASE_MS}::int * interval '1 millisecond'
           where id = ${endpointId} and leased_by = ${this.instance} and delivered_sequence < ${event.sequence}
          returning id`,
    );
    return rows.length > 0;
  }

  /**
   * Records a failed attempt and schedules the next; past the retry window, disables the endpoint
   * and appends `webhook_endpoint.disabled` instead.
   */
  private async failed(row: EndpointRow, event: LedgerEvent, o: Outcome, attempt: number, passed: number): Promise<void> {
    const { db, env } = this.runtime;
    const now = new Date();
    const failingSince = attempt === 1 || !row.failingSince ? now : row.failingSince;
    const giveUp = now.getTime() - failingSince.getTime() >= env.WEBHOOK_RETRY_FOR_MS;
    const next = giveUp ? null : new Date(now.getTime() + retryDelay(env.WEBHOOK_RETRY_BASE_MS, attempt));
    const error = o.error ?? `HTTP ${o.statusCode}`;
    const insertAttempt = sql`insert into webhook_deliveries
        (id, endpoint_id, workspace_id, event_id, sequence, event_type, attempt, succeeded, status_code, error, response_excerpt, duration_ms, next_attempt_at)
      select ${randomUUID()}, ${row.id}, ${event.workspaceId}, ${event.id}, ${event.sequence}, ${event.eventType},
             ${attempt}, false, ${o.statusCode}, ${error}, ${o.excerpt}, ${o.durationMs}, ${next?.toISOString() ?? null}::timestamptz
      where exists (select 1 from webhook_endpoints where id = ${row.id})`;
    if (!next) {
      await db.transaction(async (tx) => {
        const reason =
          `Disabled after ${plural(attempt, 'failed attempt')} over ${plural(Math.round((now.getTime() - failingSince.getTime()) / 60_000), 'minute')} ` +
          `at event ${event.sequence} (${event.eventType}); the last: ${error}.`;
        const [disabled] = await tx
          .update(webhookEndpoints)
          .set({
            status: 'disabled',
            disabledReason: reason,
            attempts: attempt,
            failingSince,
            deliveredSequence: sql`greatest(${webhookEndpoints.deliveredSequence}, ${passed})`,
            leasedBy: null,
            leaseUntil: null,
            updatedAt: now,
          })
          .where(and(eq(webhookEndpoints.id, row.id), eq(webhookEndpoints.leasedBy, this.instance)))
          .returning({ id: webhookEndpoints.id });
        if (!disabled) return;
        await tx.execute(insertAttempt);
        const actor = await systemActor(tx, row.workspaceId, 'system:webhooks');
        const [appended] = await appendEvents(
          tx,
          actor,
          [
            {
              aggregateType: 'webhook_endpoint',
              aggregateId: row.id,
              eventType: 'webhook_endpoint.disabled',
              payload: {
                id: row.id,
                reason,
                by: 'system',
                event_id: event.id,
                sequence: event.sequence,
                attempts: attempt,
                failing_since: failingSince.toISOString(),
              },
            },
          ],
          now,
        );
        await tx.update(webhookEndpoints).set({ version: appended!.aggregateVersion }).where(eq(webhookEndpoints.id, row.id));
      });
      this.runtime.wakeups.committed(row.workspaceId);
      log('warn', 'webhook endpoint disabled: retries exhausted', { endpointId: row.id, workspaceId: row.workspaceId });
      return;
    }
    await query(
      db,
      sql`with attempt as (${insertAttempt})
          update webhook_endpoints
             set attempts = ${attempt}, failing_since = ${failingSince.toISOString()}::timestamptz, next_attempt_at = ${next.toISOString()}::timestamptz,
                 delivered_sequence = greatest(delivered_sequence, ${passed}), leased_by = null, lease_until = null
           where id = ${row.id} and leased_by = ${this.instance}
          returning id`,
    );
  }

  /**
   * POSTs the event, exactly as GET /events/stream serves it, signed. Redirects are not followed
   * (a 3xx is a failure); each connection's address is checked (server/webhooks/url-policy.ts).
   */
  private send(url: string, event: LedgerEvent, secrets: string[]): Promise<Outcome> {
    const body = JSON.stringify(event);
    const at = new Date();
    const started = performance.now();
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : http;
    const agent = target.protocol === 'https:' ? this.agents.https : this.agents.http;
    const timeoutMs = this.runtime.env.WEBHOOK_TIMEOUT_MS;
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const finish = (o: Omit<Outcome, 'durationMs' | 'aborted'> & { aborted?: boolean }) => {
        if (settled) return;
        settled = true;
        resolve({ aborted: false, ...o, durationMs: Math.round(performance.now() - started) });
      };
      const request = client.request(target, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'AccountableWorkService-Webhooks/1',
          'webhook-id': event.id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signatureHeader(secrets, event.id, at, body),
        },
      });
      this.requests.add(request);
      // One deadline for the whole exchange: connecting, sending, and the answer to its end.
      const timer = setTimeout(() => request.destroy(new TimeoutError(timeoutMs)), timeoutMs);
      request.on('response', (response) => {
        let excerpt = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (excerpt.length < EXCERPT_CHARS) excerpt += chunk.slice(0, EXCERPT_CHARS - excerpt.length);
        });
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          finish({ ok, statusCode: status, error: ok ? null : `HTTP ${status}`, excerpt: excerpt || null });
        });
        response.on('error', () => undefined);
      });
      request.on('error', (err) => {
        if (err instanceof StoppingError) return finish({ ok: false, statusCode: null, error: null, excerpt: null, aborted: true });
        finish({ ok: false, statusCode: null, error: describeFailure(err), excerpt: null });
      });
      request.on('close', () => {
        clearTimeout(timer);
        this.requests.delete(request);
        finish({ ok: false, statusCode: null, error: 'The connection closed before an answer.', excerpt: null });
      });
      request.end(body);
    });
  }
}

class StoppingError extends Error {}

class TimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`No complete answer within ${ms} ms.`);
  }
}

/** A failure without an HTTP status, in words a receiver's owner can act on. */
function describeFailure(err: Error): string {
  if (err instanceof TimeoutError) return err.message;
  const code = (err as NodeJS.ErrnoException).code;
  if (/not allowed/.test(err.message)) return 'Refused: the address is not a public one (WEBHOOKS_ALLOW_PRIVATE).';
  if (code === 'ECONNREFUSED') return 'Connection refused.';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'The host could not be resolved.';
  if (code === 'ECONNRESET') return 'The connection was reset.';
  return code ? `Connection failed (${code}).` : 'Connection failed.';
}
