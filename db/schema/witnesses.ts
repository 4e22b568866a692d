/**
 * The witnesses a workspace's owners named (POST /ledger/witnesses): only their cosignatures are
 * kept and served with the checkpoints (server/ledger/cosignatures.ts, proofs.ts). A projection of
 * the `witness.named` and `witness.removed` events (server/domain/witnesses/events.ts): a removed
 * witness's row is gone, and its cosignatures, still kept in ledger_cosignatures, are served no more.
 */
import { index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { aggregateColumns } from './columns';

export const ledgerWitnesses = pgTable(
  'ledger_witnesses',
  {
    ...aggregateColumns(),
    /** The key name of its verifier key (what its cosignature lines are signed as). */
    name: text('name').notNull(),
    /** 8 hex digits: the first 4 bytes of SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key). */
    keyId: text('key_id').notNull(),
    /** `<name>+<key id>+<base64(0x04 ‖ public key)>`, as parseVkey reads it (canonical base64). */
    vkey: text('vkey').notNull(),
  },
  (t) => [
    // A cosignature line names its key by name and id: one named witness answers to each pair.
    uniqueIndex('ledger_witnesses_key_idx').on(t.workspaceId, t.name, t.keyId),
    index('ledger_witnesses_vkey_idx').on(t.workspaceId, t.vkey),
  ],
);
