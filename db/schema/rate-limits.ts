/**
 * Rate-limit counters and sign-in attempt counters, shared by every instance serving the same
 * database.
 *
 * Rate-limit counters, shared by every instance serving the same database: one row per bucket
 * (`api_key:<id>` or `validator:<client address>`) per fixed one-minute window.
 *
 * The migration creates the table UNLOGGED (drizzle-kit cannot say so): a counter is bumped on
 * every request, and writing it to the WAL and waiting for the flush would put a disk sync in
 * front of each one. After a crash the counters start from zero, which only forgives one window.
 */
import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { ts } from './columns';

export const rateLimitCounters = pgTable(
  'rate_limit_counters',
  {
    bucket: text('bucket').notNull(),
    windowStart: ts('window_start').notNull(),
    hits: integer('hits').notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.windowStart] })],
);

/**
 * Attempts at guessing a secret a human holds: sign-in per account (`sign_in:account:<email>`) and
 * per client address (`sign_in:address:<address>`), and invitation and setup links per address
 * (`token:address:<address>`). One row per bucket: `attempts` counted since `window_start`, the
 * first attempt of a window that lasts SIGN_IN_WINDOW_MINUTES (server/auth/attempt-limits.ts).
 * A logged table, unlike the request counters: a crash must not forgive a guesser.
 */
export const attemptCounters = pgTable('attempt_counters', {
  bucket: text('bucket').primaryKey(),
  windowStart: ts('window_start').notNull(),
  attempts: integer('attempts').notNull(),
});
