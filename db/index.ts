/**
 * One database client for the whole service: PostgreSQL through postgres.js when a connection
 * string is given, embedded PGlite otherwise. Both speak the same Drizzle schema and migrations.
 */
import path from 'node:path';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import type { ExtractTablesWithRelations, SQL } from 'drizzle-orm';
import * as schema from './schema';

export type Schema = typeof schema;
/** A Drizzle database on either engine. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction on either engine; services receive this. */
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
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
  /** PostgreSQL only: LISTEN on `channel` (a connection of its own, re-established by the driver). */
  listen?: (channel: string, onPayload: (payload: string) => void) => Promise<() => Promise<void>>;
  /** PostgreSQL only: NOTIFY `channel` once per payload, in one statement. */
  notify?: (channel: string, payloads: string[]) => Promise<void>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL connection string; when absent, PGlite is used. */
  url?: string;
  /** PGlite data directory, or `memory://`. */
  dataDir?: string;
  poolMax?: number;
  lockTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** Folder holding drizzle-kit's migrations. */
  migrationsFolder?: string;
  /** PGlite only: start from this dump (PGlite's dumpDataDir) instead of an empty cluster. Tests use it. */
  pgliteSnapshot?: Blob;
}

export const defaultMigrationsFolder = () => path.join(process.cwd(), 'drizzle');

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
      },
      onnotice: () => undefined,
      // int8 columns (sequence) come back as JS numbers, as PGlite returns them; a ledger will
      // not pass 2^53 events.
      types: {
        int8: { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) },
      },
    });
    const db = drizzle(client, { schema }) as unknown as Database;
    return {
      db,
      engine: 'postgres',
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
      async listen(channel, onPayload) {
        const { unlisten } = await client.listen(channel, onPayload);
        return unlisten;
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
  const db = drizzle(client, { schema }) as unknown as Database;
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
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** Runs raw SQL on either engine and returns its rows. */
export async function query<T>(executor: Executor, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await executor.execute(statement));
}

export { schema };
