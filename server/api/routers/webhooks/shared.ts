/**
 * What the procedures of webhooksRouter share: the endpoint as the API shows it, the fields of its
 * create and update, and the builder of those that act on one endpoint. Humans manage webhooks as
 * owners; any API key of the workspace may.
 */
import { z } from 'zod';
import { webhookEndpoints } from '@/db/schema';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { OWNERS } from '../../trpc';
import { apiMeta, id, text, timestamp } from '../../schemas';

const EVENT_TYPE_FILTER = /^(\*|[a-z][a-z0-9_.-]{0,99}|[a-z][a-z0-9_.-]{0,97}\.\*)$/;
export const eventTypes = z
  .array(z.string().regex(EVENT_TYPE_FILTER, 'must be an event type (decision.approved), a prefix (decision.*) or * for every event'))
  .min(1)
  .max(50)
  .transform((types) => [...new Set(types)])
  .meta({
    description:
      'Exact event types (`decision.approved`), prefixes (`decision.*` matches every `decision.` type) or `*` for every ' +
      'event. 1 to 50 entries.',
  });
export const url = z
  .string()
  .min(1)
  .max(2000)
  .meta({
    description:
      'http:// or https://, without user name or password. Hosts resolving to loopback, private, link-local or metadata ' +
      'addresses are refused (400), unless the service runs with WEBHOOKS_ALLOW_PRIVATE=true. Redirects are not followed.',
  });
export const description = text(0, 500);

export const endpointSchema = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    url: z.string(),
    description: z.string(),
    event_types: z.array(z.string()),
    status: z.enum(['enabled', 'disabled']),
    disabled_reason: z.string().nullable().meta({ description: 'Why it is disabled (retries exhausted, or a member disabled it).' }),
    aggregateVersion: z.int().meta({ description: 'The endpoint’s version in the ledger (+1 per event of it), also sent as the ETag.' }),
    created_at: timestamp(),
    updated_at: timestamp(),
    delivery: z
      .object({
        delivered_sequence: z.int().meta({ description: 'The endpoint’s cursor: every event after this sequence is still to come.' }),
        attempts: z.int().meta({ description: 'Failed attempts at the next event (0 when nothing is failing).' }),
        failing_since: timestamp().nullable(),
        next_attempt_at: timestamp().nullable().meta({ description: 'When the failing event is tried again (null: nothing to retry).' }),
        last_success_at: timestamp().nullable(),
      })
      .meta({ description: 'Where delivery stands.' }),
  })
  .meta({ id: 'WebhookEndpoint' });

/**
 * A webhook answer: `{data, meta}` like every resource outside the families the specification shapes
 * (docs/contract.md §10.4). `ok: true` was sent before `meta` was, copied from the run family: kept
 * for the clients that read it until the next API version, and marked deprecated.
 */
export function webhookAnswer<S extends z.ZodType>(data: S, schemaId: string) {
  return z.object({ data, meta: apiMeta, ok: deprecatedOk }).meta({ id: schemaId });
}
const deprecatedOk = z
  .literal(true)
  .meta({ deprecated: true, description: 'Always true. Deprecated: read `data`; it goes in API version 2.' });

/** The body of a webhook answer about `workspaceId`. */
export function answered<T>(workspaceId: string, data: T) {
  return { data, meta: { apiVersion: '1' as const, workspaceId }, ok: true as const };
}

export const endpointResponse = webhookAnswer(endpointSchema, 'WebhookEndpointResponse');
export const secretField = z.string().meta({
  description:
    'The signing secret (`whsec_…`), shown in this response only. Verify deliveries with it (Standard Webhooks: ' +
    'HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`).',
});

export const endpointPath = z.strictObject({ id: id() });

export const common = { tags: ['webhooks'] };
export const auth: ('ApiKey' | 'Session')[] = ['ApiKey', 'Session'];

const noSuchEndpoint = () => new AppError('not_found', 'No such webhook endpoint in your workspace.');

/** Acting on the endpoint the input names (`id`), as an owner of its workspace; 404 for anyone outside it. */
export const endpointProcedure = resourceProcedure(webhookEndpoints, 'id', noSuchEndpoint, OWNERS);
