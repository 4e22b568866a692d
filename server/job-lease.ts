/**
 * One instance at a time: a background job that must not run twice at once (two instances pruning
 * the same rows only contend for their locks) takes its lease in `job_leases` first, keeps it while
 * it works, and gives it back when done. The lease is a row with a holder and an end: taken when
 * absent, ended, or already ours, in one statement, so of two instances asking at once exactly one
 * gets it. An instance that dies holding it delays the job by at most the lease's length.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { query, type Executor } from '@/db';

/** This process, as a lease holder. */
export const INSTANCE_ID = `${process.pid}:${randomUUID()}`;

/** Takes (or extends) the lease `name` for `ms` when nobody else holds it; true when we hold it. */
export async function takeLease(db: Executor, name: string, ms: number, holder = INSTANCE_ID): Promise<boolean> {
  const rows = await query<{ holder: string }>(
    db,
    sql`insert into job_leases (name, holder, until)
        values (${name}, ${holder}, now() + make_interval(secs => ${ms / 1000}))
        on conflict (name) do update set holder = excluded.holder, until = excluded.until
          where job_leases.until <= now() or job_leases.holder = excluded.holder
        returning holder`,
  );
  return rows.length === 1;
}

/** Gives the lease back (when we hold it), so the next run, on any instance, need not wait for it to end. */
export async function releaseLease(db: Executor, name: string, holder = INSTANCE_ID): Promise<void> {
  await db.execute(sql`update job_leases set until = now() where name = ${name} and holder = ${holder}`);
}
