/**
 * What the webhook dispatcher (server/webhooks/dispatcher.ts) keeps in the database: which
 * endpoints are due and which instance holds each (a lease on the row), their cursors into the
 * ledger, and the attempts made. Every statement that moves an endpoint's state is conditional on
 * this instance still holding its lease, so an instance that lost it changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { query, type Database, type Executor } from '@/db';
import { webhookEndpoints } from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import type { Outcome } from './sender';

export type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** A failed attempt to deliver `event` to an endpoint, as it is recorded. */
export interface FailedAttempt {
  endpointId: string;
  event: LedgerEvent;
  outcome: Outcome;
  /** Counts from 1 for each event (the endpoint's failures in a row). */
  attempt: number;
  /** What failed, in words (the HTTP status when the receiver answered). */
  error: string;
  /** When the next attempt is due (null: none, the endpoint is being disabled). */
  next: Date | null;
}

export class DeliveryStore {
  constructor(
    private readonly db: Database,
    /** Names this instance in the leases it holds. */
    private readonly instance: string,
    private readonly leaseMs: number,
  ) {}

  /** Workspaces with an enabled endpoint. */
  async watchedWorkspaces(): Promise<Set<string>> {
    const rows = await query<{ workspace_id: string }>(
      this.db,
      sql`select distinct workspace_id from webhook_endpoints where status = 'enabled'`,
    );
    return new Set(rows.map((r) => r.workspace_id));
  }

  /**
   * Takes up to `limit` endpoints that are enabled, due, behind their workspace's head and not
   * leased by a live instance (nor among `mine`, those this instance is delivering to already): one
   * statement, rows another instance is claiming skipped.
   */
  async claim(limit: number, mine: readonly string[]): Promise<EndpointRow[]> {
    return this.db
      .update(webhookEndpoints)
      .set({ leasedBy: this.instance, leaseUntil: sql`now() + ${this.leaseMs}::int * interval '1 millisecond'` })
      .where(
        sql`${webhookEndpoints.id} in (
          select e.id from webhook_endpoints e join ledger_heads h on h.workspace_id = e.workspace_id
          where e.status = 'enabled' and e.next_attempt_at <= now() and h.sequence > e.delivered_sequence
            and (e.lease_until is null or e.lease_until < now())
            and e.id <> all(string_to_array(${mine.join(',')}::text, ',')::uuid[])
          order by e.next_attempt_at
          limit ${limit}::int
          for update of e skip locked)`,
      )
      .returning();
  }

  /** Gives the lease back (if this instance still holds it); never throws. */
  async release(endpointId: string): Promise<void> {
    await query(
      this.db,
      sql`update webhook_endpoints set leased_by = null, lease_until = null where id = ${endpointId} and leased_by = ${this.instance}`,
    ).catch(() => undefined);
  }

  /** Moves the cursor past events the endpoint does not subscribe to. */
  async advance(endpointId: string, sequence: number): Promise<boolean> {
    const rows = await query(
      this.db,
      sql`update webhook_endpoints set delivered_sequence = ${sequence}
          where id = ${endpointId} and leased_by = ${this.instance} and delivered_sequence < ${sequence} returning id`,
    );
    return rows.length > 0;
  }

  /** Records the attempt and moves the cursor past the event, renewing the lease: one statement. */
  async succeeded(endpointId: string, event: LedgerEvent, o: Outcome, attempt: number): Promise<boolean> {
    const rows = await query(
      this.db,
      sql`with attempt as (
            insert into webhook_deliveries
              (id, endpoint_id, workspace_id, event_id, sequence, event_type, attempt, succeeded, status_code, error, response_excerpt, duration_ms)
            select ${randomUUID()}, ${endpointId}, ${event.workspaceId}, ${event.id}, ${event.sequence}, ${event.eventType},
                   ${attempt}, true, ${o.statusCode}, null, ${o.excerpt}, ${o.durationMs}
            where exists (select 1 from webhook_endpoints where id = ${endpointId}))
          update webhook_endpoints
             set delivered_sequence = ${event.sequence}, attempts = 0, failing_since = null, next_attempt_at = now(),
                 last_success_at = now(), lease_until = now() + ${this.leaseMs}::int * interval '1 millisecond'
           where id = ${endpointId} and leased_by = ${this.instance} and delivered_sequence < ${event.sequence}
          returning id`,
    );
    return rows.length > 0;
  }

  /**
   * Records the attempt, schedules the next at `failed.next`, moves the cursor past `passed` (the
   * events before the failed one that the endpoint does not subscribe to) and gives the lease back:
   * one statement.
   */
  async retryLater(failed: FailedAttempt & { next: Date }, failingSince: Date, passed: number): Promise<void> {
    await query(
      this.db,
      sql`with attempt as (${attemptInsert(failed)})
          update webhook_endpoints
             set attempts = ${failed.attempt}, failing_since = ${failingSince.toISOString()}::timestamptz, next_attempt_at = ${failed.next.toISOString()}::timestamptz,
                 delivered_sequence = greatest(delivered_sequence, ${passed}), leased_by = null, lease_until = null
           where id = ${failed.endpointId} and leased_by = ${this.instance}
          returning id`,
    );
  }

  /** Records the last attempt of an endpoint being disabled, in the transaction that disables it. */
  async recordLastAttempt(tx: Executor, failed: FailedAttempt): Promise<void> {
    await query(tx, attemptInsert(failed));
  }
}

/** The attempt's row, written only while its endpoint exists (one deleted mid-delivery has taken its attempts with it). */
function attemptInsert({ endpointId, event, outcome: o, attempt, error, next }: FailedAttempt): SQL {
  return sql`insert into webhook_deliveries
        (id, endpoint_id, workspace_id, event_id, sequence, event_type, attempt, succeeded, status_code, error, response_excerpt, duration_ms, next_attempt_at)
      select ${randomUUID()}, ${endpointId}, ${event.workspaceId}, ${event.id}, ${event.sequence}, ${event.eventType},
             ${attempt}, false, ${o.statusCode}, ${error}, ${o.excerpt}, ${o.durationMs}, ${next?.toISOString() ?? null}::timestamptz
      where exists (select 1 from webhook_endpoints where id = ${endpointId})`;
}
