/**
 * Workspaces (tenants), the humans who belong to them, invitations to join, the one-time links
 * that set up an empty installation, and the instance-wide secrets.
 */
import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

import type { DecisionRule } from './decision-policy';

export const WORKSPACE_NAME_MAX = 100;

export const workspaces = pgTable(
  'workspaces',
  {
    id: uuid('id').primaryKey(),
    /** Unique without regard to case: `Acme` and `acme` would be told apart by no one. */
    name: text('name').notNull(),
    /** Decisions of these urgencies are raised with require_passkey, whatever the agent asks. */
    passkeyUrgencies: text('passkey_urgencies')
      .array()
      .notNull()
      .default(sql`'{}'`),
    /** How long the stored bytes of artifacts are kept after their last registration, in days; null: for ever. */
    artifactContentDays: integer('artifact_content_days'),
    /**
     * The workspace's decision-policy rules: applied, first match, to a decision raised
     * without a policy of its own. Their version counts PUT /decision-policy changes (0: never set).
     */
    decisionRules: jsonb('decision_rules')
      .$type<DecisionRule[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
    decisionRulesVersion: integer('decision_rules_version').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('workspaces_name_lower_key').on(sql`lower(${t.name})`),
    check('workspaces_name_length_check', sql`char_length(${t.name}) between 1 and 100`),
    check('workspaces_artifact_content_days_check', sql`${t.artifactContentDays} between 1 and 3650`),
  ],
);

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
  /** The last successful sign-in (shown to workspace owners on the members page). */
  lastSignInAt: timestamp('last_sign_in_at', { withTimezone: true, mode: 'date', precision: 3 }),
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
    /**
     * Away until then, with the member's rulings going to `delegateId`: while it holds,
     * the delegate may rule wherever the member may, and their rulings record whom they acted for.
     */
    awayUntil: timestamp('away_until', { withTimezone: true, mode: 'date', precision: 3 }),
    delegateId: uuid('delegate_id').references(() => users.id),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.userId] }),
    check('memberships_role_check', sql`${t.role} in ('owner', 'approver', 'viewer')`),
    check('memberships_delegation_check', sql`(${t.awayUntil} is null) = (${t.delegateId} is null) and ${t.delegateId} <> ${t.userId}`),
  ],
);

/**
 * Invitations to join a workspace with a role. The link's token is shown once to the owner who
 * invites (and emailed when SMTP is set up); only its SHA-256 is kept, as for API keys (the token
 * carries 256 random bits, so a fast hash is enough). Pending: neither accepted nor revoked, and
 * not past `expires_at`.
 */
export const invitations = pgTable(
  'invitations',
  {
    id: uuid('id').primaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    /** Lower-cased, like users.email. */
    email: text('email').notNull(),
    role: text('role', { enum: membershipRoles }).notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    invitedBy: uuid('invited_by').references(() => users.id),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
    acceptedAt: timestamp('accepted_at', { withTimezone: true, mode: 'date', precision: 3 }),
    acceptedBy: uuid('accepted_by').references(() => users.id),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date', precision: 3 }),
  },
  (t) => [
    index('invitations_workspace_idx').on(t.workspaceId, t.email),
    check('invitations_role_check', sql`${t.role} in ('owner', 'approver', 'viewer')`),
  ],
);

/**
 * One-time links that create the first account and workspace of an installation started without
 * the demo (SEED_DEMO=false): one is made and printed at each start while there is no user; the
 * first used ends them all. Only hashes are kept.
 */
export const setupTokens = pgTable('setup_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull(),
});

/**
 * Secrets generated once per installation and shared by every instance through the database
 * (cursor signing, session signing when AUTH_SECRET is unset).
 */
export const instanceSecrets = pgTable('instance_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
});
