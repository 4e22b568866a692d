/**
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
