/**
 * What both engines' transactions share (db/postgres.ts, db/pglite.ts): the transaction object
 * services receive (built lazily, carrying its statement runner, its statements left for COMMIT
 * and its locals: db/connection.ts), the `group` option (db/group.ts) over an engine's own
 * transaction, and the listeners told which workspaces' ledgers a transaction moved once it has
 * committed.
 */
import {
  AT_COMMIT,
  RUN_STATEMENT,
  TX_LOCALS,
  movedIn,
  runStatement,
  withRunStatement,
  type CommitStatement,
  type RunStatement,
} from './connection';
import { groupedTransactions } from './group';
import type { CommitListener, Database, Tx } from './index';

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
export function lazyTx(build: () => Tx, run: RunStatement, atCommit: CommitStatement[], locals: Record<symbol, unknown>): Tx {
  let real: Tx | undefined;
  const target = () => (real ??= withRunStatement(build(), run));
  const own = (prop: string | symbol) =>
    prop === RUN_STATEMENT ? run : prop === AT_COMMIT ? atCommit : prop === TX_LOCALS ? locals : undefined;
  return new Proxy({} as Tx, {
    get: (_, prop) => own(prop) ?? Reflect.get(target(), prop),
    has: (_, prop) => own(prop) !== undefined || Reflect.has(target(), prop),
    set: (_, prop, value) => Reflect.set(target(), prop, value),
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
}

/**
 * The commit listeners of one database (DatabaseHandle.onCommitted). Its engine calls `committed`
 * with a transaction's locals once that transaction's COMMIT has succeeded, and never otherwise: a
 * transaction that rolled back, or whose COMMIT failed (or answered ROLLBACK), tells no one. The
 * ledger records its appends in the locals (db/connection.ts markMoved), so a commit that appended
 * tells its workspaces without its caller doing anything. In a grouped transaction (db/group.ts),
 * a participant's appends count only if the participant succeeded: one rolled back to its savepoint took
 * them back, and the group's transaction carries only the others'.
 */
export class CommitListeners {
  private readonly listeners = new Set<CommitListener>();

  add(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * After a successful COMMIT. A listener that throws is reported as a process warning and does
   * not reach the transaction's caller: the transaction did commit, and a caller told otherwise
   * (or a group whose participants were) would think nothing was written.
   */
  committed(locals: Record<symbol, unknown>): void {
    const moved = movedIn(locals);
    if (!moved) return;
    for (const listener of this.listeners) {
      try {
        listener(moved);
      } catch (err) {
        process.emitWarning(err instanceof Error ? err : String(err), 'CommitListenerWarning');
      }
    }
  }
}
