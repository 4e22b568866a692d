/**
 * Idempotency records: the response of an idempotent request, stored in the same transaction
 * as the write it describes, keyed by (workspace, Idempotency-Key).
 */
import { index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { workspaces } from './workspaces';

export const idempotencyRecords = pgTable(
  'idempotency_records',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    key: text('key').notNull(),
    /** sha256 of the canonical {method, path, body}: a different request under the same key is a conflict. */
    fingerprint: text('fingerprint').notNull(),
    /**
     * Null only inside the transaction that claimed the key: the claim and the response commit
     * together, so another transaction never sees a committed record without its response.
     */
    responseStatus: integer('response_status'),
    responseBody: jsonb('response_body'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.key] }),
    // The retention job (server/retention.ts) deletes expired records oldest first, a batch at a time.
    index('idempotency_records_expires_idx').on(t.expiresAt),
  ],
);
