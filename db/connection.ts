/**
 * The driver under a database or transaction, as the hot path uses it: a statement's text and
 * parameters, run on that executor's own connection (for a transaction, the transaction's), with
 * no query builder in between. openDatabase gives one to every database and transaction it makes;
 * db/compiled.ts runs the statements it builds once through it. It is our own small interface, so
 * that nothing reaches into Drizzle's private `session` for the driver.
 *
 * A statement is sent at once, without waiting for the answers to the statements sent before it
 * on the same connection. PostgreSQL answers them in order, so a caller may send the next one
 * before it awaits the last (pipelining). The service relies on that in two places: a
 * transaction's BEGIN goes out with its first statements (db/postgres.ts, beginPipelined), and the
 * statements left for COMMIT (atCommit below: the ledger append, the stored idempotency response)
 * go out with it.
 */

/** Runs `text` with `params`; rows come back as the driver returns them (column names as in the SQL). */
export type RunStatement = <Row = Record<string, unknown>>(text: string, params: unknown[]) => Promise<Row[]>;

/**
 * Where the database layer keeps an executor's runner: a symbol, so it can never meet a Drizzle member.
 * A registered one (Symbol.for): Next's build may hold more than one copy of this module (the API's
 * graph and a page's), and the database one copy opened must be usable through any other.
 */
export const RUN_STATEMENT = Symbol.for('aws.run-statement');

/** Gives `executor` its runner (the engines, for the database and for each transaction it opens). */
export function withRunStatement<E extends object>(executor: E, run: RunStatement): E {
  Object.defineProperty(executor, RUN_STATEMENT, { value: run });
  return executor;
}

/** The runner of an executor openDatabase made. */
export function runStatement(executor: object): RunStatement {
  const run = (executor as { [RUN_STATEMENT]?: RunStatement })[RUN_STATEMENT];
  if (!run) throw new Error('This database or transaction was not opened by openDatabase (db/index.ts): it has no statement runner.');
  return run;
}

/** Where db/transaction.ts keeps a transaction's statements for its COMMIT (registered, like RUN_STATEMENT). */
export const AT_COMMIT = Symbol.for('aws.at-commit');

/** Where db/transaction.ts keeps what modules attach to one transaction (registered, like RUN_STATEMENT). */
export const TX_LOCALS = Symbol.for('aws.tx-locals');

/**
 * What modules keep for one transaction while it runs (the ledger's append left for COMMIT), each
 * under a symbol of its own; undefined for anything that is not a transaction openDatabase opened.
 *
 * On the transaction, not in a WeakMap keyed by it: V8's young-generation collector (the
 * scavenger) keeps a WeakMap entry's value alive for as long as the entry is there, whether or not
 * its key is still reachable, so a request's pending append (its events and payloads) could
 * outlive the request by a collection and be promoted to the old generation, to be marked again by
 * the next full collection (a test program keeping short-lived values in a WeakMap
 * promoted 35 times as much as one keeping them on their key).
 */
export function transactionLocals(tx: object): Record<symbol, unknown> | undefined {
  return (tx as { [TX_LOCALS]?: Record<symbol, unknown> })[TX_LOCALS];
}

/** What atCommit registers: sends one statement (or several) and gives back its outcome. */
export type CommitStatement = () => Promise<unknown>;

/**
 * Leaves a statement for the transaction's COMMIT: `send` is called when the transaction's work
 * has finished, and what it sends goes to the database in the same flight as COMMIT (on
 * PostgreSQL; PGlite runs it just before). Statements left so run in the order they were left.
 * If one fails, the transaction rolls back and fails with its error. The ledger appends this way
 * (server/ledger/append.ts appendEventsAtCommit), so the lock its append takes is held for no
 * round trip to the application. `send` must send at once, as a compiled statement or
 * runStatement does: a Drizzle query builder sends a microtask later, after the COMMIT.
 */
export function atCommit(tx: object, send: CommitStatement): void {
  const statements = (tx as { [AT_COMMIT]?: CommitStatement[] })[AT_COMMIT];
  if (!statements) throw new Error('atCommit needs a transaction opened by openDatabase (db/index.ts)');
  statements.push(send);
}

/**
 * Where a transaction's locals list the workspaces whose ledger it appended to. Registered, like
 * RUN_STATEMENT: the ledger records there through its copy of this module, and the engine that
 * opened the database reads it after COMMIT through its own.
 */
const MOVED = Symbol.for('aws.moved-workspaces');

/**
 * Records in a transaction's locals (transactionLocals) that it appended to `workspaceId`'s
 * ledger: once it has committed, the database tells its commit listeners (DatabaseHandle.onCommitted),
 * and open readers of that ledger wake. server/ledger/append.ts records every append this way, so
 * no caller has to remember to.
 */
export function markMoved(locals: Record<symbol, unknown>, workspaceId: string): void {
  const moved = locals[MOVED] as string[] | undefined;
  if (!moved) locals[MOVED] = [workspaceId];
  else if (!moved.includes(workspaceId)) moved.push(workspaceId);
}

/** The workspaces markMoved recorded in these locals, if any. */
export function movedIn(locals: Record<symbol, unknown>): readonly string[] | undefined {
  return locals[MOVED] as string[] | undefined;
}
