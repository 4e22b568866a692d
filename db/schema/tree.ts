/**
 * The Merkle tree over each workspace's ledger, and what is signed of it (server/ledger/tiles.ts,
 * integrator.ts, checkpoints.ts).
 *
 * - ledger_tree_tiles: the tree's hashes in tiles of up to 256 (C2SP tlog-tiles' shape, kept in
 *   PostgreSQL): tile `level` L, `idx` N holds the hashes of the nodes at tree height 8·L numbered
 *   256·N to 256·N + 255, concatenated (32 bytes each). A tile only grows: the integrator's upsert
 *   refuses to change a hash already written.
 * - ledger_trees: how far the tree reaches (its size and root), and the alarm that stops it when
 *   the events no longer match what it holds.
 * - ledger_signing_keys: each workspace's Ed25519 checkpoint keys, the private half encrypted at
 *   rest as webhook secrets are; retired keys stay listed.
 * - ledger_checkpoints: every signed checkpoint (a C2SP signed note), by tree size and root: a
 *   tree rebuilt from events that changed is signed again at a size already signed, with another
 *   root (a fork, which a witness catches), and both stay on record.
 * - ledger_cosignatures: the named witnesses' cosignature lines (db/schema/witnesses.ts), one per
 *   witness key and tree size (the newest it sent), with the root it vouched for.
 *
 * None of these is a projection in the strict sense: the tree is rebuilt from the events
 * (projections:rebuild), but signatures and witnesses' lines are history the ledger cannot replay.
 */
import { sql } from 'drizzle-orm';
import { bigint, check, index, pgTable, primaryKey, smallint, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { bytea, ts } from './columns';
import { workspaces } from './workspaces';

const workspaceId = () =>
  uuid('workspace_id')
    .notNull()
    .references(() => workspaces.id);

export const ledgerTreeTiles = pgTable(
  'ledger_tree_tiles',
  {
    workspaceId: workspaceId(),
    level: smallint('level').notNull(),
    idx: bigint('idx', { mode: 'number' }).notNull(),
    hashes: bytea('hashes').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.level, t.idx] }),
    check('ledger_tree_tiles_width_check', sql`length(${t.hashes}) between 32 and 8192 and length(${t.hashes}) % 32 = 0`),
  ],
);

export const ledgerTrees = pgTable('ledger_trees', {
  workspaceId: uuid('workspace_id')
    .primaryKey()
    .references(() => workspaces.id),
  /** Leaves in the tree: the events up to this sequence. */
  size: bigint('size', { mode: 'number' }).notNull().default(0),
  root: bytea('root').notNull(),
  /** Why the integrator stopped (the events no longer match the tree), null while it runs. */
  alarm: text('alarm'),
  alarmAt: ts('alarm_at'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const ledgerSigningKeys = pgTable(
  'ledger_signing_keys',
  {
    workspaceId: workspaceId(),
    /** 8 hex digits: the first 4 bytes of SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key). */
    keyId: text('key_id').notNull(),
    /** The note key name: the checkpoint origin. */
    name: text('name').notNull(),
    publicKey: bytea('public_key').notNull(),
    /** The 32-byte Ed25519 seed, encrypted (server/keys/cipher.ts). */
    privateKeyCipher: text('private_key_cipher').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    retiredAt: ts('retired_at'),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.keyId] }),
    uniqueIndex('ledger_signing_keys_current_idx')
      .on(t.workspaceId)
      .where(sql`${t.retiredAt} is null`),
  ],
);

export const ledgerCheckpoints = pgTable(
  'ledger_checkpoints',
  {
    workspaceId: workspaceId(),
    treeSize: bigint('tree_size', { mode: 'number' }).notNull(),
    root: bytea('root').notNull(),
    /** The signed note: checkpoint text, a blank line, the log's signature line. */
    note: text('note').notNull(),
    keyId: text('key_id').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.treeSize, t.root] })],
);

export const ledgerCosignatures = pgTable(
  'ledger_cosignatures',
  {
    workspaceId: workspaceId(),
    treeSize: bigint('tree_size', { mode: 'number' }).notNull(),
    /** The root of the checkpoint vouched for (with the size, which of the workspace's checkpoints it is). */
    root: bytea('root').notNull(),
    /** The witness's key name and its verifier key (type 0x04). */
    witness: text('witness').notNull(),
    keyId: text('key_id').notNull(),
    vkey: text('vkey').notNull(),
    /** The cosignature line, as the witness wrote it (with its newline). */
    line: text('line').notNull(),
    /** The time the witness signed, from its cosignature. */
    signedAt: ts('signed_at').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
  },
  (t) => [
    // One per witness per size: a witness re-sending its cosignature of a size replaces it, so the
    // lines served with a checkpoint are at most one per named witness.
    primaryKey({ columns: [t.workspaceId, t.treeSize, t.witness, t.keyId] }),
    index('ledger_cosignatures_witness_idx').on(t.workspaceId, t.witness),
  ],
);
