/**
 * Another session holding a workspace's ledger head (`select … for update` on ledger_heads) until
 * released: what a long rebuild or import does to the writes of that workspace. PostgreSQL only.
 */
import postgres from 'postgres';

export interface HeldLedgerHead {
  /** Ends the holding transaction (COMMIT) and closes its session; again, does nothing more. */
  release(): Promise<void>;
}

/** Resolves once the head of `workspaceId` is held by a session of its own on `databaseUrl`. */
export async function holdLedgerHead(databaseUrl: string, workspaceId: string): Promise<HeldLedgerHead> {
  const other = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const holding = new Promise<void>((r) => (locked = r));
  const holder = other.begin(async (tx) => {
    await tx`select 1 from ledger_heads where workspace_id = ${workspaceId} for update`;
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
