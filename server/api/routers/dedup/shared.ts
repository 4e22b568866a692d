/** What the claim and the release of a fingerprint share: its fields, and the answers' parts. */
import { z } from 'zod';
import type { Principal } from '../../trpc';
import { id, text } from '../../schemas';

export const fingerprintFields = {
  source: text(1, 120).meta({ description: 'The trigger family (a webhook or scheduler name).' }),
  event_key: text(1, 500).meta({ description: 'Stable identity of the event within its source.' }),
  initiative_id: id()
    .optional()
    .meta({ description: 'Optional scope, an initiative of your workspace; without it the claim is workspace-wide.' }),
};

export const authMode = z.object({
  auth_mode: z.enum(['api_key', 'session']).meta({ description: '`api_key` when authenticated by API key.' }),
});

export const FAIL_CLOSED =
  'The store fails closed: when the claim cannot be durably recorded the answer is 503 service_unavailable with ' +
  'Retry-After, never `claimed: true`.';

/** How the caller authenticated, as the answers say it. */
export const authModeOf = (principal: Principal) => ({
  auth_mode: principal.kind === 'api_key' ? ('api_key' as const) : ('session' as const),
});
