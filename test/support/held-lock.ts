/**
 * Another session holding a lock until released: a workspace's ledger head (`select … for update`
 * on ledger_heads, what a long rebuild or import does to the writes of that workspace), or a whole
 * table (to line up racing transactions at one statement). PostgreSQL only.
 */
import postgres from 'postgres';

export interface HeldLock {
  /** Ends the holding transaction (COMMIT) and closes its session; again, does nothing more. */
  release(): Promise<void>;
}

/** Resolves once `take` has run in a transaction of a session of its own on `databaseUrl`. */
async function holdWith(databaseUrl: string, take: (tx: postgres.TransactionSql) => Promise<unknown>): Promise<HeldLock> {
  const other = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const holding = new Promise<void>((r) => (locked = r));
  const holder = other.begin(async (tx) => {
    await take(tx);
    locked();
    await released;
  });
  holder.catch(() => undefined);
  try {
    await Promise.race([holding, holder]);
  } catch (err) {
    await other.end();
    throw err;
  }
  let ended: Promise<void> | undefined;
  return {
    release: () =>
      (ended ??= (async () => {
        release();
        try {
          await holder;
        } finally {
          await other.end();
        }
      })()),
  };
}

/** Holds the ledger head of `workspaceId`: that workspace's appends wait. */
export function holdLedgerHead(databaseUrl: string, workspaceId: string): Promise<HeldLock> {
  return holdWith(databaseUrl, (tx) => tx`select 1 from ledger_heads where workspace_id = ${workspaceId} for update`);
}

/** Holds `table` in EXCLUSIVE mode: reads go on, every write to it waits. */
export function holdTableWrites(databaseUrl: string, table: string): Promise<HeldLock> {
  return holdWith(databaseUrl, (tx) => tx`lock table ${tx(table)} in exclusive mode`);
}
