/**
 * The passkeys' slice of the event registry. A person's passkey is written into the ledger of each
 * of their workspaces, so that the assertions of their signed rulings verify from the ledger alone;
 * nothing reads these payloads back (passkeys are not a projection).
 */
import { writeOnly } from '@/server/ledger/event-types';
import { unprojected, type RulesOf } from '../projection';

export const passkeyEvents = {
  /** A passkey registered: its public key as DER SubjectPublicKeyInfo (base64). */
  'passkey.registered': writeOnly<{
    passkey_id: string;
    user_id: string;
    credential_id: string;
    public_key_spki: string;
    algorithm: number;
    name: string;
  }>()('passkey'),

  /** A person removed one of their passkeys: it signs nothing from then on. */
  'passkey.removed': writeOnly<{ passkey_id: string; user_id: string; credential_id: string }>()('passkey'),
};

export const passkeyRules: RulesOf<typeof passkeyEvents> = {
  'passkey.registered': unprojected,
  'passkey.removed': unprojected,
};
