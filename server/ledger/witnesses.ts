/**
 * What the /ledger page says of the signed tree: the newest checkpoint, and each named witness that
 * vouched for one (its cosignature of the largest tree it saw, and when it signed and sent it).
 */
import { sql } from 'drizzle-orm';
import { query, type Executor } from '@/db';
import { newestCheckpoint } from './checkpoints';

export async function witnessSummary(db: Executor, workspaceId: string) {
  const checkpoint = await newestCheckpoint(db, workspaceId);
  // One row per witness key: its cosignature of the largest tree (the last it sent, among equals).
  const rows = await query<{
    witness: string;
    key_id: string;
    tree_size: string | number;
    signed_at: Date | string;
    received_at: Date | string;
    root: Uint8Array;
  }>(
    db,
    sql`select distinct on (c.witness, c.key_id) c.witness, c.key_id, c.tree_size, c.signed_at, c.received_at, c.root
          from ledger_cosignatures c
          join ledger_witnesses w on w.workspace_id = c.workspace_id and w.vkey = c.vkey
         where c.workspace_id = ${workspaceId}
         order by c.witness, c.key_id, c.tree_size desc, c.received_at desc`,
  );
  const iso = (d: Date | string) => new Date(d).toISOString();
  return {
    checkpoint: checkpoint && {
      treeSize: checkpoint.treeSize,
      rootHash: checkpoint.root.toString('base64'),
      keyId: checkpoint.keyId,
      signedAt: checkpoint.createdAt.toISOString(),
    },
    witnesses: rows
      .map((r) => ({
        witness: r.witness,
        keyId: r.key_id,
        treeSize: Number(r.tree_size),
        rootHash: Buffer.from(r.root).toString('base64'),
        signedAt: iso(r.signed_at),
        receivedAt: iso(r.received_at),
        // It vouched for the checkpoint served now (not an earlier one, nor another root at that size).
        current: checkpoint !== null && Number(r.tree_size) === checkpoint.treeSize && Buffer.from(r.root).equals(checkpoint.root),
      }))
      .sort((a, b) => b.receivedAt.localeCompare(a.receivedAt)),
  };
}
