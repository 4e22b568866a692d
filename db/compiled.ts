/**
 * Statements Drizzle builds once and the hot path runs many times.
 *
 * Drizzle builds a statement's text from its query-builder tree on every call: for POST /work's
 * insert of a task and its receipt, its idempotency claim and its stored response, that building
 * was ~11% of the request's CPU in a profile (bench/, issue 7). A compiled statement is built once,
 * with a placeholder for every value, the first time it runs; after that only its parameters are
 * filled, and it runs on the executor's own connection (inside its transaction) through
 * db/connection.ts, logged to the database's logger like Drizzle's own statements (bench/limit.ts
 * records our SQL that way).
 *
 * A placeholder given as a column's value goes through that column's encoder when it is filled
 * (dates to ISO text, arrays to PostgreSQL array text, JSON to text), as Drizzle's own statements
 * send it; one inside an `sql` fragment is sent as given. Rows come back as the driver returns
 * them (column names as in the SQL, no Drizzle mapping).
 */
import { fillPlaceholders, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { runStatement } from './connection';
import type { Executor } from './index';

interface Built {
  sql: string;
  params: unknown[];
}

type PlaceholderFn<Values> = <K extends keyof Values & string>(name: K) => Placeholder<K>;

export function compiled<Values extends Record<string, unknown>, Row = Record<string, unknown>>(
  build: (executor: Executor, p: PlaceholderFn<Values>) => { toSQL(): Built },
): (executor: Executor, values: Values) => Promise<Row[]> {
  let built: Built | undefined;
  return async (executor, values) => {
    built ??= build(executor, (name) => sql.placeholder(name)).toSQL();
    return runStatement(executor)<Row>(built.sql, fillPlaceholders(built.params, values));
  };
}

const dialect = new PgDialect();

/**
 * A raw SQL statement built once, like `compiled`: for statements written as SQL rather than with
 * the query builder (functions, CTEs the builder cannot express). Values go in as placeholders.
 */
export function compiledSql<Values extends Record<string, unknown>, Row = Record<string, unknown>>(
  build: (p: PlaceholderFn<Values>) => SQL,
): (executor: Executor, values: Values) => Promise<Row[]> {
  return compiled<Values, Row>((_, p) => ({ toSQL: () => dialect.sqlToQuery(build(p)) }));
}

/** Placeholders for the columns `keys` of an insert, each named `prefix + key`. */
export function rowPlaceholders<K extends string>(
  keys: readonly K[],
  prefix: string,
  p: (name: string) => Placeholder,
): Record<K, Placeholder> {
  return Object.fromEntries(keys.map((k) => [k, p(prefix + k)])) as Record<K, Placeholder>;
}

/** The values for `rowPlaceholders(…, prefix)`: `row`'s fields under their prefixed names. */
export function prefixed(row: Record<string, unknown>, prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in row) out[prefix + k] = row[k];
  return out;
}
