/**
 * The PostgreSQL engine: postgres.js's pool with our startup settings, named prepared statements,
 * transactions whose BEGIN goes out with their first statement, migrations serialised across
 * instances, and the LISTEN (db/listen.ts), NOTIFY and COPY the service uses besides.
 */
import type { Database, DatabaseHandle, OpenOptions, PoolStats, Tx } from './index';
import { withRunStatement, type CommitStatement, type RunStatement } from './connection';
import { listenOn } from './listen';
import { CommitListeners, lazyTx, withGroups } from './transaction';

type PostgresSql = import('postgres').Sql;

// Fixed key for the advisory lock that serialises migrations between instances starting together.
const MIGRATION_LOCK_KEY = 727_001;

export async function openPostgres(url: string, opts: OpenOptions, migrationsFolder: string): Promise<DatabaseHandle> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const { migrate } = await import('drizzle-orm/postgres-js/migrator');
  const client = postgres(url, {
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
  const commits = new CommitListeners();
  const transaction = <T>(work: (tx: Tx) => Promise<T>) =>
    beginPipelined(client, commits, (connection, atCommit, locals) =>
      work(
        lazyTx(
          () => drizzle({ client: preparing(connection, client.options), logger }) as unknown as Tx,
          runOn(connection),
          atCommit,
          locals,
        ),
      ),
    );
  db.transaction = withGroups(transaction, opts.sharedGroups);
  return {
    db,
    engine: 'postgres',
    onCommitted: (listener) => commits.add(listener),
    copyOut: (statement) => client.unsafe(statement).readable(),
    poolStats: () => (client as unknown as { stats: PoolStats }).stats,
    async migrate() {
      // The lock lives on a connection of its own: taking one from the pool could leave the
      // migration none to run on (a pool of one would wait for itself).
      const lock = postgres(url, { max: 1, onnotice: () => undefined });
      try {
        await lock`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
        await migrate(db as never, { migrationsFolder });
      } finally {
        await lock.end({ timeout: 5 });
      }
    },
    listen: (channel, onPayload, onState) => listenOn(postgres, url, channel, onPayload, onState),
    async notify(channel, payloads) {
      await client`select pg_notify(${channel}, p) from unnest(${payloads}::text[]) as p`;
    },
    close: () => client.end({ timeout: 5 }),
  };
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
 * connection released either way. Transactions never nest; the savepoints inside one are grouped
 * writes' (db/group.ts), each rolled back to on its own failure within the same transaction. Once
 * COMMIT has succeeded, `commits` hears of the ledgers the transaction's locals say it moved.
 */
async function beginPipelined<T>(
  pool: PostgresSql,
  commits: CommitListeners,
  fn: (connection: PostgresSql, atCommit: CommitStatement[], locals: Record<symbol, unknown>) => Promise<T>,
): Promise<T> {
  const connection = await pool.reserve();
  const locals: Record<symbol, unknown> = {};
  let result: T;
  try {
    const begun = connection.unsafe('begin').execute();
    // Its failure (a lost connection) reaches the caller through the statements that follow: all
    // of them, those the driver holds unsent behind a running one too (patches/postgres+3.4.9.patch;
    // unpatched, they never settled and the request waited forever).
    begun.catch(() => undefined);
    const atCommit: CommitStatement[] = [];
    let left: Promise<unknown>[];
    try {
      result = await fn(connection as unknown as PostgresSql, atCommit, locals);
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
  } finally {
    connection.release();
  }
  // Committed, and the connection back in the pool: a listener's wake-up may read at once.
  commits.committed(locals);
  return result;
}
