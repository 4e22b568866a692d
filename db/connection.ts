/**
 * The driver under a database or transaction, as the hot path uses it: a statement's text and
 * parameters, run on that executor's own connection (for a transaction, the transaction's), with
 * no query builder in between. db/index.ts gives one to every database and transaction it makes;
 * db/compiled.ts runs the statements it builds once through it. It is our own small interface, so
 * that nothing reaches into Drizzle's private `session` for the driver.
 *
 * A statement is sent at once, without waiting for the answers to the statements sent before it
 * on the same connection. PostgreSQL answers them in order, so a caller may send the next one
 * before it awaits the last (pipelining). The service relies on that in two places: a
 * transaction's BEGIN goes out with its first statements (db/index.ts, beginPipelined), and
 * runMutation's stored idempotency response goes out with COMMIT (server/api/mutation.ts).
 */

/** Runs `text` with `params`; rows come back as the driver returns them (column names as in the SQL). */
export type RunStatement = <Row = Record<string, unknown>>(text: string, params: unknown[]) => Promise<Row[]>;

/**
 * Where db/index.ts keeps an executor's runner: a symbol, so it can never meet a Drizzle member.
 * A registered one (Symbol.for): Next's build may hold more than one copy of this module (the API's
 * graph and a page's), and the database one copy opened must be usable through any other.
 */
const RUN = Symbol.for('aws.run-statement');

/** Gives `executor` its runner (db/index.ts, for the database and for each transaction it opens). */
export function withRunStatement<E extends object>(executor: E, run: RunStatement): E {
  Object.defineProperty(executor, RUN, { value: run });
  return executor;
}

/** The runner of an executor db/index.ts made. */
export function runStatement(executor: object): RunStatement {
  const run = (executor as { [RUN]?: RunStatement })[RUN];
  if (!run) throw new Error('This database or transaction was not opened by openDatabase (db/index.ts): it has no statement runner.');
  return run;
}
