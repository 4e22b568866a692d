/**
 * grant_signing_keys: each workspace's Ed25519 keys for grant tokens (server/keys/grant-keys.ts),
 * kept apart from its checkpoint keys (ledger_signing_keys) so that the JWKS a tool server trusts
 * and the keys a witness pins are never the same key. `kid` is the key's RFC 7638 JWK thumbprint,
 * as the JWKS serves it. The private half (the 32-byte seed) is encrypted at rest
 * (server/keys/cipher.ts); retired keys stay, so the grants they signed keep their tokens.
 *
 * Rows whose `kid` is 8 hex digits are the checkpoint keys that signed grants before grants had
 * keys of their own, copied here (retired) when this table was made: see docs/contract.md §4.14.
 */
import { sql } from 'drizzle-orm';
import { pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { bytea, ts } from './columns';
import { workspaces } from './workspaces';

export const grantSigningKeys = pgTable(
  'grant_signing_keys',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id),
    kid: text('kid').notNull(),
    publicKey: bytea('public_key').notNull(),
    privateKeyCipher: text('private_key_cipher').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    retiredAt: ts('retired_at'),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.kid] }),
    uniqueIndex('grant_signing_keys_current_idx')
      .on(t.workspaceId)
      .where(sql`${t.retiredAt} is null`),
  ],
);
