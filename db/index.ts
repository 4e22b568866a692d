/**
 * One database client for the whole service: PostgreSQL through postgres.js when a connection
 * string is given, embedded PGlite otherwise. Both speak the same Drizzle schema and migrations.
 */
import path from 'node:path';
import type { Logger, SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { AT_COMMIT, RUN_STATEMENT, TX_LOCALS, runStatement, withRunStatement, type CommitStatement, type RunStatement } from './connection';
import { groupedTransactions } from './group';

/**
 * A Drizzle database on either engine. It is made without the schema: the schema only feeds
 * Drizzle's relational `db.query.*` API, which the service does not use, and Drizzle builds one
 * relational query builder per table of it for every transaction (~25 objects on each write).
 */
type NoSchema = Record<string, never>;
type DrizzleDatabase = PgDatabase<PgQueryResultHKT, NoSchema>;
/**
 * A transaction in progress, as services receive it: a Drizzle database on the transaction's own
 * connection (db/index.ts opens it; see Database.transaction). It cannot open another: nothing in
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

export interface DatabaseHandle {
  db: Database;
  engine: Engine;
  /** Runs the committed migrations (idempotent; serialised across instances on PostgreSQL). */
  migrate(): Promise<void>;
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

const defaultMigrationsFolder = () => path.join(process.cwd(), 'drizzle');

// Fixed key for the advisory lock that serialises migrations between instances starting together.
const MIGRATION_LOCK_KEY = 727_001;

export async function openDatabase(opts: OpenOptions): Promise<DatabaseHandle> {
  const migrationsFolder = opts.migrationsFolder ?? defaultMigrationsFolder();
  if (opts.url) {
    const { default: postgres } = await import('postgres');
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const { migrate } = await import('drizzle-orm/postgres-js/migrator');
    const client = postgres(opts.url, {
      max: opts.poolMax ?? 10,
      // Sent in the startup packet, so bounding lock waits costs no round trip per transaction.
      connection: {
        lock_timeout: opts.lockTimeoutMs ?? 5000,
        statement_timeout: opts.statementTimeoutMs ?? 30000,
        TimeZone: 'UTC',
        // The append and idempotency paths are written for READ COMMITTED (each statement sees
        // what committed before it); a server whose default is stricter must not change that.
        default_transaction_isolation: 'read committed',
        // Every statement here reads or writes a handful of rows. JIT compiles a plan whose cost
        // estimate is high, and a LIMIT over a filtered index scan (GET /tasks?ready=true) is
        // estimated in the millions though it reads fifty rows: compiling took 230 ms of a 0.5 ms
        // query (bench/tasks.ts). OLTP gains nothing from JIT.
        jit: 'off',
      },
      onnotice: () => undefined,
      // Seconds before a closed connection reconnects, by the pool's count of failures in a row.
      // postgres.js's own grows as 3^n / 100 up to 20 s: after the database had been away for a
      // second, requests queued for tens of seconds after it was back (test/api/faults). Capped
      // at 1 s here, with jitter so the pool's connections do not retry in step.
      backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2),
      // int8 columns (sequence) come back as JS numbers, as PGlite returns them; a ledger will
      // not pass 2^53 events.
      types: {
        int8: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) },
      },
    });
    const { logger } = opts;
    // Each transaction gets a Drizzle database of its own on its reserved connection. Drizzle's
    // postgres.js driver reads the client's `options` (to install its type parsers), which a
    // reserved connection does not carry: the pool's are handed on.
    const runOn = (sql: PostgresSql): RunStatement => {
      return (text, params) => {
        logger?.logQuery(text, params);
        // execute(): sent now (postgres.js sends a query when it is first awaited otherwise), so
        // statements reach PostgreSQL in the order they are called (db/connection.ts). Named and
        // prepared (cached per connection; preparing() below says why): postgres.js's unsafe()
        // sends unnamed statements unless asked.
        return sql.unsafe(text, params as never[], { prepare: true }).execute() as never;
      };
    };
    const pool = preparing(client);
    const db = withRunStatement(drizzle({ client: pool, logger }) as unknown as Database, runOn(client));
    const transaction = <T>(work: (tx: Tx) => Promise<T>) =>
      beginPipelined(client, (connection, atCommit) =>
        work(
          lazyTx(() => drizzle({ client: preparing(connection, client.options), logger }) as unknown as Tx, runOn(connection), atCommit),
        ),
      );
    db.transaction = withGroups(transaction, opts.sharedGroups);
    return {
      db,
      engine: 'postgres',
      copyOut: (statement) => client.unsafe(statement).readable(),
      poolStats: () => (client as unknown as { stats: PoolStats }).stats,
      async migrate() {
        // The lock lives on a connection of its own: taking one from the pool could leave the
        // migration none to run on (a pool of one would wait for itself).
        const lock = postgres(opts.url!, { max: 1, onnotice: () => undefined });
        try {
          await lock`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
          await migrate(db as never, { migrationsFolder });
        } finally {
          await lock.end({ timeout: 5 });
        }
      },
      async listen(channel, onPayload, onState) {
        // Not postgres.js's own listen(): it re-LISTENs after a drop too, but says nothing when
        // the connection is lost, and a reader that cannot tell must keep polling.
        const statement = `listen "${channel.replace(/"/g, '""')}"`;
        let ended = false;
        let wanted = false;
        let running = false;
        const options = {
          max: 1,
          idle_timeout: 0,
          max_lifetime: null,
          fetch_types: false,
          onnotice: () => undefined,
          onnotify: (name: string, payload: string) => {
            if (name === channel) onPayload(payload);
          },
          onclose: () => {
            if (ended) return;
            onState?.(false);
            relisten();
          },
        };
        const connection = postgres(opts.url!, options);
        const relisten = () => {
          wanted = true;
          if (!running) void loop();
        };
        const loop = async () => {
          running = true;
          let delay = 0;
          while (wanted && !ended) {
            wanted = false;
            if (delay > 0) await new Promise((r) => setTimeout(r, delay).unref());
            if (ended) break;
            try {
              await connection.unsafe(statement);
              delay = 0;
              if (!ended && !wanted) onState?.(true);
            } catch {
              wanted = true;
              delay = Math.min(Math.max(delay * 2, 250), 5000);
            }
          }
          running = false;
        };
        try {
          await connection.unsafe(statement);
        } catch (err) {
          ended = true;
          await connection.end({ timeout: 1 }).catch(() => undefined);
          throw err;
        }
        onState?.(true);
        return async () => {
          ended = true;
          await connection.end({ timeout: 5 });
        };
      },
      async notify(channel, payloads) {
        await client`select pg_notify(${channel}, p) from unnest(${payloads}::text[]) as p`;
      },
      close: () => client.end({ timeout: 5 }),
    };
  }

  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  const dataDir = opts.dataDir ?? 'memory://';
  const release = dataDir.startsWith('memory://') ? async () => undefined : await lockDataDir(dataDir);
  let client: InstanceType<typeof PGlite>;
  try {
    client = opts.pgliteSnapshot ? await PGlite.create({ dataDir, loadDataDir: opts.pgliteSnapshot }) : await PGlite.create(dataDir);
  } catch (err) {
    await release();
    throw err;
  }
  const { logger } = opts;
  // Rows as Drizzle's PGlite driver has them: objects, timestamps as text (postgres.js: Drizzle's parsers).
  const rowsAsDrizzle = { rowMode: 'object', parsers: { 1114: (v: string) => v, 1184: (v: string) => v } } as const;
  const runOn = (target: Pick<typeof client, 'query'>): RunStatement => {
    return async (text, params) => {
      logger?.logQuery(text, params);
      return (await target.query(text, params, rowsAsDrizzle)).rows as never;
    };
  };
  const db = withRunStatement(drizzle({ client, logger }) as unknown as Database, runOn(client));
  db.transaction = withGroups(async <T>(work: (tx: Tx) => Promise<T>) => {
    // PGlite runs one transaction at a time; its transaction() holds the others back until this one ends.
    const result = await client.transaction(async (t) => {
      const atCommit: CommitStatement[] = [];
      const out = await work(lazyTx(() => drizzle({ client: t as never, logger }) as unknown as Tx, runOn(t), atCommit));
      // In order, each before the next: on PGlite there is no flight to share.
      for (const send of atCommit) await send();
      return out;
    });
    return result as T;
  }, opts.sharedGroups);
  return {
    db,
    engine: 'pglite',
    async migrate() {
      await migrate(db as never, { migrationsFolder });
    },
    dump: () => client.dumpDataDir('none'),
    async close() {
      await client.close();
      await release();
    },
  };
}

type PostgresSql = import('postgres').Sql;

/** An engine's transaction, taking the `group` option (db/group.ts) too. */
function withGroups(transaction: <T>(work: (tx: Tx) => Promise<T>) => Promise<T>, sharedGroups?: number): Database['transaction'] {
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
function lazyTx(build: () => Tx, run: RunStatement, atCommit: CommitStatement[]): Tx {
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

/**
 * The client Drizzle gets: every statement sent as a named prepared statement, cached per
 * connection by its text. Drizzle asks postgres.js for unnamed statements (prepare: false), and
 * postgres.js sends an unnamed statement with parameters in two round trips (Parse and Describe,
 * wait for the parameter types, then Bind and Execute), parsed and planned each time; prepared,
 * a repeated statement is one Bind and Execute. Our statements come from a fixed set of texts, so
 * the per-connection caches stay small. A transaction's reserved connection is wrapped the same
 * way, with the pool's `options` (Drizzle's driver reads them; a reserved connection has none).
 * (A transaction-pooling proxy such as PgBouncer in transaction mode would need prepared-statement
 * support.)
 */
function preparing(sql: PostgresSql, options: PostgresSql['options'] = sql.options): PostgresSql {
  return new Proxy(sql, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (query: string, params?: unknown[], queryOptions?: Record<string, unknown>) =>
          target.unsafe(query, params as never, { ...queryOptions, prepare: true });
      }
      if (prop === 'options') return options;
      return Reflect.get(target, prop, receiver);
    },
  });
}

/**
 * A transaction whose BEGIN goes out with its first statement. postgres.js's begin() waits for
 * BEGIN's answer before it runs the callback: a round trip of its own on every write (one of seven
 * for POST /work). Here the connection is reserved, BEGIN is sent without waiting, and the
 * callback's first statement follows it in the same flight; PostgreSQL answers them in order, so a
 * failed BEGIN fails that statement too. COMMIT when the callback resolves, sent with the
 * statements the callback left for it (db/connection.ts atCommit); ROLLBACK when it throws; the
 * connection released either way. (No savepoints: nothing here nests transactions.)
 */
async function beginPipelined<T>(pool: PostgresSql, fn: (connection: PostgresSql, atCommit: CommitStatement[]) => Promise<T>): Promise<T> {
  const connection = await pool.reserve();
  try {
    const begun = connection.unsafe('begin').execute();
    // Its failure (a lost connection) reaches the caller through the statements that follow: all
    // of them, those the driver holds unsent behind a running one too (patches/postgres+3.4.9.patch;
    // unpatched, they never settled and the request waited forever).
    begun.catch(() => undefined);
    const atCommit: CommitStatement[] = [];
    let result: T;
    let left: Promise<unknown>[];
    try {
      result = await fn(connection as unknown as PostgresSql, atCommit);
      await begun;
      // The statements left for COMMIT (db/connection.ts atCommit), sent now: the driver writes
      // them and the COMMIT below in one flight (nothing is awaited between them).
      left = atCommit.map((send) => send());
      for (const statement of left) statement.catch(() => undefined);
    } catch (err) {
      await connection.unsafe('rollback').catch(() => undefined);
      throw err;
    }
    // Everything is answered before the connection goes back to the pool. Released as soon as a
    // statement left for COMMIT had failed (the append timing out on the workspace's lock), the
    // connection was handed to the next caller still inside the aborted transaction
    // (test/api/faults.postgres.int.test.ts and ledger-readers caught it: their next statements
    // failed with "current transaction is aborted").
    const outcomes = await Promise.allSettled([...left, connection.unsafe('commit').execute()]);
    // A failed statement left for COMMIT fails the transaction with its own error (PostgreSQL
    // then answers COMMIT with ROLLBACK).
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    // A statement that failed inside leaves the transaction aborted, and PostgreSQL answers its
    // COMMIT with ROLLBACK, not an error: that must not pass for a commit, whoever caught the failure.
    const committed = (outcomes.at(-1) as PromiseFulfilledResult<{ command: string }>).value;
    if (committed.command !== 'COMMIT') throw new Error(`the transaction was rolled back (COMMIT answered ${committed.command})`);
    return result;
  } finally {
    connection.release();
  }
}

/**
 * Two processes on one PGlite directory lose writes silently, so the directory is locked for as
 * long as it is open; a second opener gets a clear error instead.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const fs = await import('node:fs/promises');
  const lockfile = await import('proper-lockfile');
  await fs.mkdir(dataDir, { recursive: true });
  try {
    return await lockfile.lock(dataDir, { stale: 15_000, update: 5_000, realpath: false });
  } catch (err) {
    if ((err as { code?: string }).code === 'ELOCKED') {
      throw new Error(
        `The PGlite data directory ${dataDir} is in use by another process (a running server?). ` +
          'Stop it first, or point PGLITE_DATA_DIR elsewhere.',
      );
    }
    throw err;
  }
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
