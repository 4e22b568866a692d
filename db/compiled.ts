/**
 * Statements Drizzle builds once and the hot path runs many times.
 *
 * Drizzle builds a statement's text from its query-builder tree on every call: for POST /work's
 * insert of a task and its receipt, its idempotency claim and its stored response, that building
 * was ~11% of the request's CPU in a profile (bench/; docs/contract.md §14). A compiled statement is built once,
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
import { is, Param, Placeholder, sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { runStatement } from './connection';
import type { Executor } from './index';

interface Built {
  sql: string;
  params: unknown[];
}

type PlaceholderFn<Values> = <K extends keyof Values & string>(name: K) => Placeholder<K>;
type Values = Record<string, unknown>;
/** Gives one parameter's value: a constant, a placeholder's value, or its value through its column's encoder. */
type Filler = (values: Values) => unknown;

/**
 * How a placeholder's value is found in the values object: `name` is a key of it, and `group.name`
 * (rowPlaceholders) a key of the record under `group`, split once when the statement is built.
 */
function lookupOf(name: string): (values: Values) => unknown {
  const dot = name.indexOf('.');
  if (dot < 0) {
    return (values) => {
      if (!(name in values)) throw new Error(`No value for placeholder "${name}" was provided`);
      return values[name];
    };
  }
  const group = name.slice(0, dot);
  const field = name.slice(dot + 1);
  return (values) => {
    const record = values[group] as Values | undefined;
    if (typeof record !== 'object' || record === null || !(field in record))
      throw new Error(`No value for placeholder "${name}" was provided`);
    return record[field];
  };
}

/**
 * What Drizzle's fillPlaceholders does for one parameter, decided once per statement instead of on
 * every call (it tells placeholders from values by walking each one's class chain).
 */
function fillerOf(param: unknown): Filler {
  if (is(param, Placeholder)) return lookupOf(param.name as string);
  if (is(param, Param) && is(param.value, Placeholder)) {
    const lookup = lookupOf(param.value.name as string);
    const encoder = param.encoder;
    return (values) => encoder.mapToDriverValue(lookup(values));
  }
  return () => param;
}

export function compiled<V extends Values, Row = Record<string, unknown>>(
  build: (executor: Executor, p: PlaceholderFn<V>) => { toSQL(): Built },
): (executor: Executor, values: V) => Promise<Row[]> {
  let text: string | undefined;
  let fillers: Filler[] = [];
  // Not an async function: the driver's own promise is handed back, without one more around it.
  return (executor, values) => {
    try {
      if (text === undefined) {
        const built = build(executor, (name) => sql.placeholder(name)).toSQL();
        fillers = built.params.map(fillerOf);
        text = built.sql;
      }
      const params = new Array<unknown>(fillers.length);
      for (let i = 0; i < fillers.length; i++) params[i] = fillers[i]!(values);
      return runStatement(executor)<Row>(text, params);
    } catch (err) {
      return Promise.reject(err);
    }
  };
}

const dialect = new PgDialect();

/**
 * A raw SQL statement built once, like `compiled`: for statements written as SQL rather than with
 * the query builder (functions, CTEs the builder cannot express). Values go in as placeholders.
 */
export function compiledSql<V extends Values, Row = Record<string, unknown>>(
  build: (p: PlaceholderFn<V>) => SQL,
): (executor: Executor, values: V) => Promise<Row[]> {
  return compiled<V, Row>((_, p) => ({ toSQL: () => dialect.sqlToQuery(build(p)) }));
}

/**
 * Placeholders for the columns `keys` of an insert, filled from the record under `group` of the
 * values: `{ [group]: row }`. Two rows of one statement (a task and its receipt) keep their own
 * records, whose fields share names, with no copy of either under prefixed keys (building such
 * keys per request cost more than the rest of the statement's filling).
 */
export function rowPlaceholders<K extends string>(
  keys: readonly K[],
  group: string,
  p: (name: never) => Placeholder,
): Record<K, Placeholder> {
  // `group.key` is no key of the values' type, which PlaceholderFn checks names against.
  return Object.fromEntries(keys.map((k) => [k, p(`${group}.${k}` as never)])) as Record<K, Placeholder>;
}
