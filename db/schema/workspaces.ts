/** Workspaces (tenants), the humans who belong to them, and the instance-wide secrets. */
import { sql } from 'drizzle-orm';
import { check, integer, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

export const workspaces = pgTable('workspaces', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});

export const users = pgTable('users', {
  id: uuid('id').primaryKey(),
  /** Stored lower-cased; sign-in compares lower-cased input. */
  email: text('email').notNull().unique(),
  displayName: text('display_name').notNull(),
  /** argon2id hash (PHC string). Never the password. */
  passwordHash: text('password_hash').notNull(),
  /**
   * Sessions carry the epoch they were issued in; signing out advances it, so a copied session
   * cookie stops working at once even though sessions are stateless JWTs.
   */
  sessionEpoch: integer('session_epoch').notNull().default(0),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});

export const membershipRoles = ['owner', 'approver', 'viewer'] as const;
export type MembershipRole = (typeof membershipRoles)[number];

export const memberships = pgTable(
  'memberships',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    role: text('role', { enum: membershipRoles }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.userId] }),
    check('memberships_role_check', sql`${t.role} in ('owner', 'approver', 'viewer')`),
  ],
);

/**
 * Secrets generated once per installation and shared by every instance through the database
 * (cursor signing, session signing when AUTH_SECRET is unset).
 */
export const instanceSecrets = pgTable('instance_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});
