/**
 * Disabling a webhook endpoint whose deliveries kept failing: the endpoint stops receiving, says
 * why, and `webhook_endpoint.disabled` is appended, in the caller's transaction. The dispatcher
 * (server/webhooks/dispatcher.ts) calls it, as the service itself, once an event has failed for
 * WEBHOOK_RETRY_FOR_MS; a member turns the endpoint on again through updateEndpoint.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { webhookEndpoints } from '@/db/schema';
import { appendEvents } from '@/server/ledger/append';
import type { LedgerEvent } from '@/server/ledger/canonical';
import { plural } from '@/server/words';
import type { Actor } from '../actor';

export interface DisableEndpointInput {
  id: string;
  /**
   * The dispatcher instance that holds the endpoint's lease: the endpoint is disabled only while it
   * still does, so an instance that lost it (another has delivered since) changes nothing.
   */
  leasedBy: string;
  /** The event that could not be delivered. */
  event: LedgerEvent;
  /** Attempts made at it. */
  attempts: number;
  /** When its first failed attempt was. */
  failingSince: Date;
  /** The last attempt's failure, in words. */
  error: string;
  /** The cursor moves at least this far (past the events before it that the endpoint does not subscribe to). */
  passed: number;
  now: Date;
}

/** Disables the endpoint and appends the event; false (and nothing changed) when the lease was lost. */
export async function disableEndpoint(tx: Tx, actor: Actor, input: DisableEndpointInput): Promise<boolean> {
  const { id, leasedBy, event, attempts: attempt, failingSince, error, passed, now } = input;
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
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.leasedBy, leasedBy)))
    .returning({ id: webhookEndpoints.id });
  if (!disabled) return false;
  const [appended] = await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'webhook_endpoint',
        aggregateId: id,
        eventType: 'webhook_endpoint.disabled',
        payload: {
          id,
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
  await tx.update(webhookEndpoints).set({ version: appended!.aggregateVersion }).where(eq(webhookEndpoints.id, id));
  return true;
}
