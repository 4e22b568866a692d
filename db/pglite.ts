/**
 * The embedded engine: PGlite, in memory or in a data directory locked against a second process.
 * One connection, so one transaction at a time.
 */
import type { Database, DatabaseHandle, OpenOptions, Tx } from './index';
import { withRunStatement, type CommitStatement, type RunStatement } from './connection';
import { CommitListeners, lazyTx, withGroups } from './transaction';

export async function openPglite(opts: OpenOptions, migrationsFolder: string): Promise<DatabaseHandle> {
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
  const commits = new CommitListeners();
  db.transaction = withGroups(async <T>(work: (tx: Tx) => Promise<T>) => {
    const locals: Record<symbol, unknown> = {};
    // PGlite runs one transaction at a time; its transaction() holds the others back until this one ends.
    const result = await client.transaction(async (t) => {
      const atCommit: CommitStatement[] = [];
      const out = await work(lazyTx(() => drizzle({ client: t as never, logger }) as unknown as Tx, runOn(t), atCommit, locals));
      // In order, each before the next: on PGlite there is no flight to share.
      for (const send of atCommit) await send();
      return out;
    });
    // Committed (a failed COMMIT, or a rollback, rejected above).
    commits.committed(locals);
    return result as T;
  }, opts.sharedGroups);
  return {
    db,
    engine: 'pglite',
    onCommitted: (listener) => commits.add(listener),
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
  // The directory holds every row (password hashes, encrypted keys, the ledger): its owner's only,
  // as PostgreSQL insists of its own data directory. One made readable by others earlier (the
  // process's umask, 0755 here) is tightened; one this process does not own is left as it is.
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (((await fs.stat(dataDir)).mode & 0o077) !== 0) await fs.chmod(dataDir, 0o700).catch(() => undefined);
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
