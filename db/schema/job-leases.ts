/**
 * Leases of background jobs that must run on one instance at a time, whatever the number of
 * instances on the database (server/job-lease.ts): one row per job, held by `holder` (an instance's
 * random id) until `until`. An instance that dies holding one only delays the job until the lease
 * runs out.
 */
import { pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './columns';

export const jobLeases = pgTable('job_leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  until: ts('until').notNull(),
});
