/** The API keys' slice of the event registry: credentials are not a projection, so nothing reads these back. */
import { writeOnly } from '@/server/ledger/event-types';
import { unprojected, type RulesOf } from '../projection';

export const apiKeyEvents = {
  'api_key.created': writeOnly<{ id: string; name: string; prefix: string; owner_user_id: string }>()('api_key'),
  /** `reason`: when the key went with its owner's membership or ownership. */
  'api_key.revoked': writeOnly<{ id: string; prefix: string; reason?: 'owner_removed' | 'owner_demoted' }>()('api_key'),
};

export const apiKeyRules: RulesOf<typeof apiKeyEvents> = {
  'api_key.created': unprojected,
  'api_key.revoked': unprojected,
};
