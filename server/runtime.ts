/**
 * The process-wide runtime: the open database (migrated), the settings and the instance secrets.
 * Opened lazily on first use and cached on globalThis, because Next.js loads route handlers and
 * instrumentation as separate module graphs and must still share one database (PGlite allows one).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { openDatabase, query, type Database, type DatabaseHandle, type Engine } from '@/db';
import { instanceSecrets } from '@/db/schema';
import { env as readEnv, type Env } from './env';
import { LedgerWakeups, WAKE_CHANNEL } from './ledger/wake';
import type { SigningSettings } from './keys/workspace-keys';

interface InstanceSecrets {
  /** Signs event-stream cursors. */
  cursor: string;
  /** Signs session cookies (AUTH_SECRET when set). */
  auth: string;
  /** Encrypts webhook signing secrets at rest (WEBHOOK_SECRET_KEY when set). */
  webhook: string;
  /** Encrypts the workspaces' checkpoint and grant keys at rest (LEDGER_KEY_SECRET when set). */
  ledger: string;
}

export interface Runtime {
  db: Database;
  engine: Engine;
  /** PostgreSQL only: a COPY's rows as they arrive (DatabaseHandle.copyOut; ledger:verify reads with it). */
  copyOut?: DatabaseHandle['copyOut'];
  /** PostgreSQL only: the connection pool's state (DatabaseHandle.poolStats), for the metrics. */
  poolStats?: DatabaseHandle['poolStats'];
  env: Env;
  secrets: InstanceSecrets;
  /** Wakes open event-stream leases when a workspace's ledger moves. */
  wakeups: LedgerWakeups;
  close(): Promise<void>;
}

/** What signing for a workspace needs of the instance (checkpoints, grants): its address and the key secret. */
export function signingOf(runtime: Pick<Runtime, 'env' | 'secrets'>): SigningSettings {
  return { appUrl: runtime.env.APP_URL, secret: runtime.secrets.ledger };
}

/** Opens and migrates the database named by `env`, and loads (or creates) the instance secrets. */
export async function createRuntime(env: Env, extra: { migrationsFolder?: string; pgliteSnapshot?: Blob } = {}): Promise<Runtime> {
  const handle: DatabaseHandle = await openDatabase({
    ...extra,
    url: env.DATABASE_URL,
    dataDir: env.PGLITE_DATA_DIR,
    poolMax: env.DB_POOL_MAX,
    sharedGroups: env.DB_SHARED_GROUPS,
    lockTimeoutMs: env.DB_LOCK_TIMEOUT_MS,
    statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS,
  });
  try {
    await handle.migrate();
    const secrets = {
      cursor: await instanceSecret(handle.db, 'cursor_hmac'),
      auth: env.AUTH_SECRET ?? (await instanceSecret(handle.db, 'auth')),
      webhook: env.WEBHOOK_SECRET_KEY ?? (await instanceSecret(handle.db, 'webhook_secret_key')),
      ledger: env.LEDGER_KEY_SECRET ?? (await instanceSecret(handle.db, 'ledger_key_secret')),
    };
    const notify = handle.notify;
    const wakeups = new LedgerWakeups(notify ? (ids) => notify(WAKE_CHANNEL, ids) : undefined);
    // Every transaction that appended wakes its workspaces once it has committed (the database
    // tells of it: db/transaction.ts CommitListeners), here and, through NOTIFY, on other instances.
    handle.onCommitted((workspaceIds) => {
      for (const workspaceId of workspaceIds) wakeups.committed(workspaceId);
    });
    // Other instances' commits reach this one through LISTEN; while that connection is down the
    // wake-ups are not healthy and leases poll (server/ledger/wake.ts).
    const unlisten = handle.listen
      ? await handle.listen(
          WAKE_CHANNEL,
          (payload) => wakeups.heard(payload),
          (listening) => wakeups.setListening(listening),
        )
      : null;
    return {
      db: handle.db,
      engine: handle.engine,
      copyOut: handle.copyOut,
      poolStats: handle.poolStats,
      env,
      secrets,
      wakeups,
      async close() {
        await wakeups.close();
        await unlisten?.().catch(() => undefined);
        await handle.close();
      },
    };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

async function instanceSecret(db: Database, name: string): Promise<string> {
  await db
    .insert(instanceSecrets)
    .values({ name, value: randomBytes(32).toString('base64url') })
    .onConflictDoNothing();
  const [row] = await db.select({ value: instanceSecrets.value }).from(instanceSecrets).where(eq(instanceSecrets.name, name));
  if (!row) throw new Error(`instance secret ${name} missing`);
  return row.value;
}

const globalKey = Symbol.for('accountable-work-service.runtime');
type GlobalWithRuntime = typeof globalThis & { [globalKey]?: Promise<Runtime> };

/** The runtime of this process, opened from the process environment on first call. */
export function getRuntime(): Promise<Runtime> {
  const g = globalThis as GlobalWithRuntime;
  if (!g[globalKey]) {
    g[globalKey] = createRuntime(readEnv()).catch((err: unknown) => {
      delete g[globalKey];
      throw err;
    });
  }
  return g[globalKey];
}

/** Closes the process runtime if it was opened (on shutdown: PGlite must close its files cleanly). */
export async function closeRuntime(): Promise<void> {
  const g = globalThis as GlobalWithRuntime;
  const pending = g[globalKey];
  delete g[globalKey];
  if (pending) await (await pending).close();
}

/** A trivial query used by health checks. */
export async function ping(db: Database): Promise<void> {
  await db.execute(sql`select 1`);
}

/** The newest migration this code ships (drizzle/meta/_journal.json), read once. */
let shipped: { tag: string; when: number } | undefined;
function newestShippedMigration(): { tag: string; when: number } {
  if (!shipped) {
    const journal = JSON.parse(readFileSync(path.join(process.cwd(), 'drizzle', 'meta', '_journal.json'), 'utf8')) as {
      entries: { tag: string; when: number }[];
    };
    const last = journal.entries.at(-1);
    if (!last) throw new Error('drizzle/meta/_journal.json lists no migration');
    shipped = { tag: last.tag, when: last.when };
  }
  return shipped;
}

/**
 * Whether the database has every migration this code ships (drizzle's own record of them, by the
 * journal's timestamp): an instance whose schema is behind must not take traffic. Throws what the
 * database throws when it cannot be reached.
 */
export async function schemaState(db: Database): Promise<{ current: boolean; newest: string }> {
  const newest = newestShippedMigration();
  const [row] = await query<{ applied: string | null }>(db, sql`select max(created_at)::text as applied from drizzle.__drizzle_migrations`);
  return { current: Number(row?.applied ?? 0) >= newest.when, newest: newest.tag };
}
