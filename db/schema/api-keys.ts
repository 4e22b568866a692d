/** Workspace-bound API keys. Only a SHA-256 hash of the secret is stored; the secret is shown once. */
import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users, workspaces } from './workspaces';

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    /** The human accountable for what the key does; becomes `ownerId` on its ledger events. */
    ownerUserId: uuid('owner_user_id')
      .notNull()
      .references(() => users.id),
    name: text('name').notNull(),
    /** The first characters of the key, safe to display so a human can tell keys apart. */
    prefix: text('prefix').notNull(),
    /** Hex SHA-256 of the whole key. Keys carry 256 random bits, so a fast hash is enough. */
    secretHash: text('secret_hash').notNull().unique(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date', precision: 3 }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date', precision: 3 }),
  },
  (t) => [index('api_keys_workspace_idx').on(t.workspaceId)],
);
