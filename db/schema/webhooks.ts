/**
 * Webhook endpoints and their delivery attempts.
 *
 * An endpoint's outbox is its cursor into the ledger (`delivered_sequence`): every event of its
 * workspace after it, of a subscribed type, is still to be delivered, in sequence order. There is
 * no second queue to keep in step with the ledger. The delivery state of the event at the cursor
 * (attempts, next attempt, failing since) and the lease that lets one instance at a time deliver
 * to the endpoint live on the same row (server/webhooks/dispatcher.ts).
 */
import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { aggregateColumns, ts } from './columns';

export const webhookEndpointStatuses = ['enabled', 'disabled'] as const;
export type WebhookEndpointStatus = (typeof webhookEndpointStatuses)[number];

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    ...aggregateColumns(),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    /** Exact event types, prefixes written `decision.*`, or `*` for every event. */
    eventTypes: text('event_types').array().notNull(),
    status: text('status', { enum: webhookEndpointStatuses }).notNull().default('enabled'),
    /** Why it was disabled (retries exhausted), null while enabled. */
    disabledReason: text('disabled_reason'),
    /**
     * The signing secret (`whsec_…`), encrypted (server/webhooks/secrets.ts): the service signs
     * with it, so it cannot be kept as a hash like API keys are.
     */
    secretCipher: text('secret_cipher').notNull(),
    /** The secret replaced by the last rotation, still signed with until `previous_secret_expires_at`. */
    previousSecretCipher: text('previous_secret_cipher'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** The last ledger sequence delivered (or skipped as not subscribed): the outbox cursor. */
    deliveredSequence: bigint('delivered_sequence', { mode: 'number' }).notNull(),
    /** Failed attempts at the event after the cursor. */
    attempts: integer('attempts').notNull().default(0),
    /** The first failure of the event after the cursor: retries stop WEBHOOK_RETRY_FOR_MS after it. */
    failingSince: ts('failing_since'),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    lastSuccessAt: ts('last_success_at'),
    /** The instance delivering to this endpoint, and until when (null: nobody). */
    leasedBy: text('leased_by'),
    leaseUntil: ts('lease_until'),
  },
  (t) => [
    index('webhook_endpoints_workspace_idx').on(t.workspaceId, t.createdAt),
    index('webhook_endpoints_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'enabled'`),
    check('webhook_endpoints_status_check', sql`${t.status} in ('enabled', 'disabled')`),
  ],
);

/** One attempt at delivering one event to one endpoint. Deleted with the endpoint. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').primaryKey(),
    endpointId: uuid('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id').notNull(),
    eventId: uuid('event_id').notNull(),
    sequence: bigint('sequence', { mode: 'number' }).notNull(),
    eventType: text('event_type').notNull(),
    /** 1 for the first attempt at this event, then +1. */
    attempt: integer('attempt').notNull(),
    succeeded: boolean('succeeded').notNull(),
    /** The receiver's HTTP status, null when it gave none (timeout, refused connection). */
    statusCode: integer('status_code'),
    /** Why it failed without a status (or the status that failed it), in a few words. */
    error: text('error'),
    /** The start of the receiver's answer (1,000 characters at most), for debugging a receiver. */
    responseExcerpt: text('response_excerpt'),
    durationMs: integer('duration_ms').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    /** When the next attempt at this event is due (failures that will be retried). */
    nextAttemptAt: ts('next_attempt_at'),
  },
  (t) => [
    index('webhook_deliveries_endpoint_idx').on(t.endpointId, t.createdAt, t.id),
    // The retention job (server/retention.ts) deletes attempts older than DELIVERY_LOG_DAYS by it.
    index('webhook_deliveries_created_idx').on(t.createdAt),
  ],
);
