/**
 * The per-workspace hash-chained ledger and its head row.
 * Rows of ledger_events are append-only: a trigger (drizzle/0001_ledger_guard.sql) refuses UPDATE,
 * DELETE and TRUNCATE, and the append itself is the SQL function ledger_append (same file).
 */
import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { GENESIS_HASH } from './genesis';
import { workspaces } from './workspaces';

export const ledgerHeads = pgTable('ledger_heads', {
  workspaceId: uuid('workspace_id')
    .primaryKey()
    .references(() => workspaces.id),
  /** Sequence of the last appended event (0 before the first). */
  sequence: bigint('sequence', { mode: 'number' }).notNull().default(0),
  headHash: text('head_hash').notNull().default(GENESIS_HASH),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});

export const ledgerEvents = pgTable(
  'ledger_events',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    /** 1, 2, 3 … per workspace, assigned under the head-row lock: commit order equals cursor order. */
    sequence: bigint('sequence', { mode: 'number' }).notNull(),
    id: uuid('id').notNull().unique(),
    ownerId: uuid('owner_id').notNull(),
    aggregateType: text('aggregate_type').notNull(),
    aggregateId: uuid('aggregate_id').notNull(),
    aggregateVersion: integer('aggregate_version').notNull(),
    eventType: text('event_type').notNull(),
    schemaVersion: integer('schema_version').notNull(),
    actorType: text('actor_type', { enum: ['api_key', 'human', 'system'] }).notNull(),
    actorId: text('actor_id').notNull(),
    /**
     * The payload as jsonb: events appended before payload_text was kept (migration 0021). Newer
     * events leave it null and keep only the text: one copy of the payload, not two.
     */
    payload: jsonb('payload'),
    /**
     * The payload's exact canonical text (RFC 8785), the bytes its payloadDigest and the event's
     * hash were computed over: verification hashes it as it is, with no parsing.
     */
    payloadText: text('payload_text'),
    payloadDigest: text('payload_digest').notNull(),
    /** Kept as the exact string that was hashed (ISO 8601, milliseconds, Z). */
    occurredAtCanonical: text('occurred_at').notNull(),
    idempotencyKey: text('idempotency_key'),
    causationId: uuid('causation_id').notNull(),
    correlationId: uuid('correlation_id').notNull(),
    contextManifestDigest: text('context_manifest_digest').notNull(),
    previousHash: text('previous_hash').notNull(),
    eventHash: text('event_hash').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.sequence] }),
    unique('ledger_events_aggregate_version_key').on(t.workspaceId, t.aggregateId, t.aggregateVersion),
    index('ledger_events_type_idx').on(t.workspaceId, t.eventType, t.sequence),
    check('ledger_events_event_type_check', sql`${t.eventType} ~ '^[a-z][a-z0-9_.-]{0,99}$'`),
    check('ledger_events_actor_type_check', sql`${t.actorType} in ('api_key', 'human', 'system')`),
    check('ledger_events_sequence_check', sql`${t.sequence} > 0`),
    check('ledger_events_payload_check', sql`${t.payload} is not null or ${t.payloadText} is not null`),
  ],
);
