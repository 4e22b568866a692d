/**
 * What both engines' transactions share (db/postgres.ts, db/pglite.ts): the transaction object
 * services receive (built lazily, carrying its statement runner, its statements left for COMMIT
 * and its locals: db/connection.ts), and the `group` option (db/group.ts) over an engine's own
 * transaction.
 */
import { AT_COMMIT, RUN_STATEMENT, TX_LOCALS, runStatement, withRunStatement, type CommitStatement, type RunStatement } from './connection';
import { groupedTransactions } from './group';
import type { Database, Tx } from './index';

/** An engine's own transaction: COMMIT when `work` resolves, ROLLBACK when it throws. */
export type EngineTransaction = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;

/** An engine's transaction, taking the `group` option (db/group.ts) too. */
export function withGroups(transaction: EngineTransaction, sharedGroups?: number): Database['transaction'] {
  const grouped = groupedTransactions<Tx>(transaction, (tx, text) => runStatement(tx)(text, []), sharedGroups);
  return (work, opts) => (opts?.group === undefined ? transaction(work) : grouped(opts.group, work, opts.acrossWorkspaces));
}

/**
 * A transaction whose Drizzle database is built when it is first used. Building one (drizzle()
 * makes a dialect and a session, and installs its type parsers on the client) cost ~5 µs and its
 * garbage on every transaction, and the hot paths (POST /work, the idempotency claim and store,
 * the append) never use it: they run compiled statements through the runner, which this answers
 * without building anything. Everything else is the Drizzle database's, with `this` forwarded.
 */
export function lazyTx(build: () => Tx, run: RunStatement, atCommit: CommitStatement[]): Tx {
  let real: Tx | undefined;
  const target = () => (real ??= withRunStatement(build(), run));
  const locals: Record<symbol, unknown> = {};
  const own = (prop: string | symbol) =>
    prop === RUN_STATEMENT ? run : prop === AT_COMMIT ? atCommit : prop === TX_LOCALS ? locals : undefined;
  return new Proxy({} as Tx, {
    get: (_, prop) => own(prop) ?? Reflect.get(target(), prop),
    has: (_, prop) => own(prop) !== undefined || Reflect.has(target(), prop),
    set: (_, prop, value) => Reflect.set(target(), prop, value),
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
}
