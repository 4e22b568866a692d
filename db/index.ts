/**
 * One database client for the whole service: PostgreSQL through postgres.js when a connection
 * string is given (db/postgres.ts), embedded PGlite otherwise (db/pglite.ts). Both speak the same
 * Drizzle schema and migrations. Here: what the rest of the service sees of either, and the choice.
 */
import path from 'node:path';
import type { Logger, SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { openPglite } from './pglite';
import { openPostgres } from './postgres';

/**
 * A Drizzle database on either engine. It is made without the schema: the schema only feeds
 * Drizzle's relational `db.query.*` API, which the service does not use, and Drizzle builds one
 * relational query builder per table of it for every transaction (~25 objects on each write).
 */
type NoSchema = Record<string, never>;
type DrizzleDatabase = PgDatabase<PgQueryResultHKT, NoSchema>;
/**
 * A transaction in progress, as services receive it: a Drizzle database on the transaction's own
 * connection (db/transaction.ts builds it; see Database.transaction). It cannot open another: nothing in
 * the service nests transactions.
 */
export type Tx = Omit<DrizzleDatabase, 'transaction'>;
/** A database on either engine. */
export type Database = Tx & {
  /**
   * Runs `work` in a transaction: COMMIT when it resolves, ROLLBACK when it throws. Ours, not
   * Drizzle's: on PostgreSQL its BEGIN goes out with the first statement (beginPipelined), and the
   * transaction carries its connection's statement runner (db/connection.ts).
   */
  transaction<T>(work: (tx: Tx) => Promise<T>, opts?: TransactionOptions): Promise<T>;
};

interface TransactionOptions {
  /**
   * Calls with the same group (a workspace id) that run at the same time in this process may share
   * one transaction, each in a savepoint of its own (db/group.ts): one COMMIT and one lock for all.
   */
  group?: string;
  /**
   * With `group`: the call takes its workspace's ledger lock only at COMMIT (its appends are left
   * for it, appendEventsAtCommit, and it calls no lockWorkspaceLedger), so it may also share a
   * transaction with such calls for other workspaces (db/group.ts, shared groups).
   */
  acrossWorkspaces?: boolean;
}
/** Anything that can run a query: the database or a transaction in progress. */
export type Executor = Database | Tx;

export type Engine = 'postgres' | 'pglite';

/** Told the workspaces whose ledgers a transaction appended to, once it has committed. */
export type CommitListener = (workspaceIds: readonly string[]) => void;

export interface DatabaseHandle {
  db: Database;
  engine: Engine;
  /** Runs the committed migrations (idempotent; serialised across instances on PostgreSQL). */
  migrate(): Promise<void>;
  /**
   * Calls `listener` after each COMMIT of a transaction that appended to ledgers, with their
   * workspaces (db/transaction.ts CommitListeners says when exactly); returns the function that
   * stops it. The runtime wakes those workspaces' open readers with it (server/runtime.ts).
   */
  onCommitted(listener: CommitListener): () => void;
  /** PGlite only: the whole cluster as a tarball. */
  dump?: () => Promise<Blob>;
  /**
   * PostgreSQL only: LISTEN on `channel` on a connection of its own, re-established whenever it
   * drops. `onState` says when the connection is listening (true: also after each re-LISTEN, so
   * signals sent while it was down may have been missed) and when it was lost (false). Rejects
   * when the first LISTEN fails.
   */
  listen?: (channel: string, onPayload: (payload: string) => void, onState?: (listening: boolean) => void) => Promise<() => Promise<void>>;
  /**
   * PostgreSQL only: the rows of `COPY (…) TO STDOUT` as they arrive, in COPY's text format. Read
   * it to its end: stopping early would leave the connection paused under the copy.
   */
  copyOut?: (statement: string) => Promise<AsyncIterable<Buffer>>;
  /**
   * PostgreSQL only: the connection pool's state now (patches/postgres+3.4.9.patch, change 10): its
   * size, connections idle, in use (running a query or reserved by a transaction) and opening, and
   * queries waiting for a connection.
   */
  poolStats?: () => PoolStats;
  /** PostgreSQL only: NOTIFY `channel` once per payload, in one statement. */
  notify?: (channel: string, payloads: string[]) => Promise<void>;
  close(): Promise<void>;
}

export interface PoolStats {
  max: number;
  idle: number;
  inUse: number;
  connecting: number;
  waiting: number;
}

export interface OpenOptions {
  /** PostgreSQL connection string; when absent, PGlite is used. */
  url?: string;
  /** PGlite data directory, or `memory://`. */
  dataDir?: string;
  poolMax?: number;
  /** How many shared groups writes to different workspaces may join (db/group.ts; default 2). */
  sharedGroups?: number;
  lockTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** Folder holding drizzle-kit's migrations. */
  migrationsFolder?: string;
  /** PGlite only: start from this dump (PGlite's dumpDataDir) instead of an empty cluster. Tests use it. */
  pgliteSnapshot?: Blob;
  /** Told every statement, Drizzle's and compiled ones alike (bench/limit.ts records our SQL with it). */
  logger?: Logger;
}

export async function openDatabase(opts: OpenOptions): Promise<DatabaseHandle> {
  const migrationsFolder = opts.migrationsFolder ?? path.join(process.cwd(), 'drizzle');
  return opts.url ? openPostgres(opts.url, opts, migrationsFolder) : openPglite(opts, migrationsFolder);
}

/** Rows of a raw `execute()`: postgres.js returns an array, PGlite an object with `rows`. */
function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** Runs raw SQL on either engine and returns its rows. */
export async function query<T>(executor: Executor, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await executor.execute(statement));
}
