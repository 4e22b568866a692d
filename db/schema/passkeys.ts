/**
 * Passkeys (WebAuthn credentials) of the people who sign in, and the challenges they answer.
 *
 * - passkeys: one row per credential, with its public key twice: as the authenticator gave it
 *   (COSE, what @simplewebauthn verifies with) and as DER SubjectPublicKeyInfo, which the ledger's
 *   `passkey.registered` events carry so that an offline verifier needs no CBOR.
 * - webauthn_challenges: each challenge handed to a browser, used once: to add a passkey, to sign
 *   in with one, or to sign a ruling (then with the statement whose digest is the challenge).
 */
import { sql } from 'drizzle-orm';
import { bigint, check, index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { bytea, ts } from './columns';
import { users } from './workspaces';

export const passkeys = pgTable(
  'passkeys',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    /** The credential id, base64url, as WebAuthn names it. */
    credentialId: text('credential_id').notNull().unique(),
    /** The COSE public key. */
    publicKey: bytea('public_key').notNull(),
    /** The same key as DER SubjectPublicKeyInfo. */
    publicKeySpki: bytea('public_key_spki').notNull(),
    /** The COSE algorithm (-7 ES256, -8 EdDSA, -257 RS256). */
    algorithm: bigint('algorithm', { mode: 'number' }).notNull(),
    /** The authenticator's signature counter, as last seen. */
    counter: bigint('counter', { mode: 'number' }).notNull().default(0),
    transports: jsonb('transports').$type<string[]>(),
    name: text('name').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
  },
  (t) => [index('passkeys_user_idx').on(t.userId)],
);

export const webauthnChallenges = pgTable(
  'webauthn_challenges',
  {
    id: uuid('id').primaryKey(),
    purpose: text('purpose', { enum: ['register', 'sign_in', 'ruling'] }).notNull(),
    /** Whose it is; null for signing in (who is not known until the answer names a passkey). */
    userId: uuid('user_id').references(() => users.id),
    /** base64url, as the browser echoes it in clientDataJSON. */
    challenge: text('challenge').notNull(),
    /** For a ruling: the statement the challenge is the digest of. */
    statement: jsonb('statement').$type<Record<string, unknown>>(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('webauthn_challenges_expires_idx').on(t.expiresAt),
    check('webauthn_challenges_purpose_check', sql`${t.purpose} in ('register', 'sign_in', 'ruling')`),
  ],
);
