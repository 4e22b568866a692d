/**
 * The webhook endpoints' slice of the event registry. Endpoints are not a projection: nothing reads
 * these payloads back. An endpoint's URL never enters the ledger, only where it goes (url-target.ts).
 */
import type { LedgerEvent } from '@/server/ledger/canonical';
import { writeOnly } from '@/server/ledger/event-types';
import { unprojected, type RulesOf } from '../projection';
import type { UrlTarget } from '../url-target';

export const webhookEndpointEvents = {
  'webhook_endpoint.created': writeOnly<{ id: string; target: UrlTarget; event_types: string[]; description: string }>()(
    'webhook_endpoint',
  ),
  /** Only what changed. */
  'webhook_endpoint.updated': writeOnly<{ id: string; target?: UrlTarget; event_types?: string[]; description?: string }>()(
    'webhook_endpoint',
  ),
  'webhook_endpoint.enabled': writeOnly<{ id: string; resumes_after_sequence: number }>()('webhook_endpoint'),
  /** By a member or an agent; by the system (server/webhooks/dispatcher.ts) with the delivery that kept failing. */
  'webhook_endpoint.disabled': writeOnly<{
    id: string;
    reason: string;
    by: LedgerEvent['actorType'];
    event_id?: string;
    sequence?: number;
    attempts?: number;
    failing_since?: string;
  }>()('webhook_endpoint'),
  'webhook_endpoint.deleted': writeOnly<{ id: string; target: UrlTarget }>()('webhook_endpoint'),
  'webhook_endpoint.secret_rotated': writeOnly<{ id: string; previous_secret_expires_at: string }>()('webhook_endpoint'),
  'webhook_endpoint.test': writeOnly<{ id: string; message: string }>()('webhook_endpoint'),
};

export const webhookEndpointRules: RulesOf<typeof webhookEndpointEvents> = {
  'webhook_endpoint.created': unprojected,
  'webhook_endpoint.updated': unprojected,
  'webhook_endpoint.enabled': unprojected,
  'webhook_endpoint.disabled': unprojected,
  'webhook_endpoint.deleted': unprojected,
  'webhook_endpoint.secret_rotated': unprojected,
  'webhook_endpoint.test': unprojected,
};
