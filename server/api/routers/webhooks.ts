/**
 * Webhook endpoints: POST/GET /webhooks, GET/PATCH/DELETE /webhooks/{id}, rotate-secret, test and
 * deliveries. For any API key of the workspace, and for its owners signed in (/settings/webhooks).
 * Delivery itself is server/webhooks/dispatcher.ts.
 */
import { z } from 'zod';
import { webhookEndpoints } from '@/db/schema';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  MAX_ENDPOINTS_PER_WORKSPACE,
  requestTest,
  rotateSecret,
  updateEndpoint,
} from '@/server/domain/webhooks/endpoints';
import { AppError } from '@/server/errors';
import { checkWebhookUrl } from '@/server/webhooks/url-policy';
import type { Trace } from '@/server/domain/actor';
import { listScope, openList, pageMeta, pageOf, pageParams, readCursor } from '../keyset';
import { etag, ifMatchOf, patchHeaders } from '../versioning';
import { actorFor } from '../locate';
import { checkedInTransaction, runMutation } from '../mutation';
import { actorIn, defaultWorkspace, memberProcedure, router, type ApiContext, type Principal } from '../trpc';
import { id, jsonBoolean, text, timestamp } from '../schemas';

/** Humans manage webhooks as owners; any API key of the workspace may. */
const OWNERS = ['owner'] as const;

const EVENT_TYPE_FILTER = /^(\*|[a-z][a-z0-9_.-]{0,99}|[a-z][a-z0-9_.-]{0,97}\.\*)$/;
const eventTypes = z
  .array(z.string().regex(EVENT_TYPE_FILTER, 'must be an event type (decision.approved), a prefix (decision.*) or * for every event'))
  .min(1)
  .max(50)
  .transform((types) => [...new Set(types)])
  .meta({
    description:
      'Exact event types (`decision.approved`), prefixes (`decision.*` matches every `decision.` type) or `*` for every ' +
      'event. 1 to 50 entries.',
  });
const url = z
  .string()
  .min(1)
  .max(2000)
  .meta({
    description:
      'http:// or https://, without user name or password. Hosts resolving to loopback, private, link-local or metadata ' +
      'addresses are refused (400), unless the service runs with WEBHOOKS_ALLOW_PRIVATE=true. Redirects are not followed.',
  });
const description = text(0, 500);

const endpointSchema = z
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

const endpointResponse = z.object({ ok: z.literal(true), data: endpointSchema }).meta({ id: 'WebhookEndpointResponse' });
const secretField = z.string().meta({
  description:
    'The signing secret (`whsec_…`), shown in this response only. Verify deliveries with it (Standard Webhooks: ' +
    'HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`).',
});
const createdResponse = z
  .object({ ok: z.literal(true), data: endpointSchema.extend({ secret: secretField }) })
  .meta({ id: 'WebhookEndpointCreated' });
const rotatedResponse = z
  .object({
    ok: z.literal(true),
    data: endpointSchema.extend({
      secret: secretField,
      previous_secret_expires_at: timestamp().meta({ description: 'Until then deliveries carry a signature by each secret.' }),
    }),
  })
  .meta({ id: 'WebhookSecretRotated' });

const deliverySchema = z
  .object({
    id: z.uuid(),
    event_id: z.uuid().meta({ description: 'The ledger event, also the webhook-id header.' }),
    sequence: z.int(),
    event_type: z.string(),
    attempt: z.int().meta({ description: '1 for the first attempt at this event, then +1.' }),
    succeeded: z.boolean(),
    status_code: z.int().nullable().meta({ description: 'The receiver’s HTTP status; null when it gave none.' }),
    error: z.string().nullable(),
    response_excerpt: z.string().nullable().meta({ description: 'The first 1,000 characters of the receiver’s answer.' }),
    duration_ms: z.int(),
    attempted_at: timestamp(),
    next_attempt_at: timestamp().nullable().meta({ description: 'For a failure that will be retried: when.' }),
  })
  .meta({ id: 'WebhookDelivery' });

const endpointPath = z.strictObject({ id: id() });

type Caller = ApiContext & { principal: Principal; trace: Trace };

const noSuchEndpoint = () => new AppError('not_found', 'No such webhook endpoint in your workspace.');

/** The endpoint's workspace as the caller acts in it; 404 for anyone outside it. */
const locate = (ctx: Caller, endpointId: string) => actorFor(ctx, webhookEndpoints, endpointId, noSuchEndpoint, OWNERS);

const common = { tags: ['webhooks'] };
const auth: ('ApiKey' | 'Session')[] = ['ApiKey', 'Session'];

export const webhooksRouter = router({
  create: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'POST',
        path: '/webhooks',
        summary: 'Create a webhook endpoint',
        description:
          'Events of the subscribed types that the ledger records from now on are POSTed to `url`, one event per ' +
          'request, in sequence order, at least once, exactly as GET /events/stream serves them, signed per the ' +
          'Standard Webhooks specification (headers webhook-id = the event id, webhook-timestamp, webhook-signature). ' +
          'A 2xx answer within 10 s delivers it; anything else is retried with exponential backoff and jitter for 24 ' +
          'hours, after which the endpoint is disabled (`webhook_endpoint.disabled`). The secret is in this response ' +
          `only. A workspace has at most ${MAX_ENDPOINTS_PER_WORKSPACE} endpoints. An Idempotency-Key is checked ` +
          'but not replayed: the response holds the secret, which is never stored in the clear; list the endpoints to ' +
          'find one whose creation’s answer was lost.',
      },
      auth,
      successStatus: 201,
      errorCodes: ['forbidden', 'conflict', 'invalid_idempotency_key'],
    })
    .input(
      z.strictObject({
        workspace_id: id().optional().meta({ description: 'Optional for an API key (its workspace); a human’s default is their first.' }),
        url,
        event_types: eventTypes.default(['*']),
        description: description.default(''),
      }),
    )
    .output(checkedInTransaction(createdResponse))
    .mutation(async ({ ctx, input }) => {
      const workspaceId = input.workspace_id ?? defaultWorkspace(ctx.principal);
      const actor = actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden', roles: OWNERS });
      const { env, secrets } = ctx.runtime;
      const checked = await checkWebhookUrl(input.url, env.WEBHOOKS_ALLOW_PRIVATE);
      return runMutation(ctx, actor, { status: 201, output: createdResponse }, async (tx) => {
        const { endpoint, secret } = await createEndpoint(
          tx,
          actor,
          { url: checked, eventTypes: input.event_types, description: input.description },
          secrets.webhook,
        );
        return { ok: true as const, data: { ...endpoint, secret } };
      });
    }),

  list: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'GET',
        path: '/webhooks',
        summary: 'List webhook endpoints',
        description: 'Newest first, paged by cursor.',
      },
      auth,
      errorCodes: ['forbidden', 'invalid_cursor'],
    })
    .input(z.strictObject({ ...pageParams }))
    .output(z.object({ data: z.array(endpointSchema), meta: pageMeta }).meta({ id: 'WebhookEndpointList' }))
    .query(async ({ ctx, input }) => {
      const { workspaceId, scope, after } = openList(ctx, 'webhooks', input);
      actorIn(ctx.principal, ctx.trace, workspaceId, { outsider: 'forbidden', roles: OWNERS });
      const { db, secrets } = ctx.runtime;
      const rows = await listEndpoints(db, workspaceId, { after, limit: input.limit + 1 });
      const { page, meta } = pageOf(rows, (r) => r.key, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
      return { data: page.map(({ key: _key, ...view }) => view), meta };
    }),

  get: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'GET',
        path: '/webhooks/{id}',
        summary: 'Read a webhook endpoint',
        description: 'The endpoint (never its secret) with an ETag of its version, for a conditional PATCH.',
      },
      auth,
      errorCodes: ['not_found', 'forbidden'],
      successHeaders: { ETag: 'The endpoint’s aggregateVersion, quoted: send it back as If-Match on PATCH.' },
    })
    .input(endpointPath)
    .output(endpointResponse)
    .query(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      const endpoint = await getEndpoint(ctx.runtime.db, actor.workspaceId, input.id);
      ctx.res.headers.ETag = etag(endpoint.aggregateVersion);
      return { ok: true as const, data: endpoint };
    }),

  update: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'PATCH',
        path: '/webhooks/{id}',
        summary: 'Change a webhook endpoint',
        description:
          'Changes the fields given. `enabled: false` stops deliveries (events keep collecting behind the cursor); ' +
          '`enabled: true` resumes a disabled endpoint at the event it stopped at, with a fresh retry window. Each ' +
          'change is a ledger event (webhook_endpoint.updated, .enabled, .disabled); a patch that changes nothing is ' +
          '200 and writes nothing. With `If-Match: "<aggregateVersion>"`, an endpoint that has moved past that version is ' +
          '412 precondition_failed and nothing changes. The response’s ETag is the new version.',
        requestHeaders: patchHeaders,
      },
      auth,
      errorCodes: ['not_found', 'forbidden', 'precondition_failed', 'invalid_idempotency_key'],
      successHeaders: { ETag: 'The endpoint’s aggregateVersion after the change, quoted.' },
    })
    .input(
      z.strictObject({
        id: id(),
        url: url.optional(),
        event_types: eventTypes.optional(),
        description: description.optional(),
        enabled: jsonBoolean().optional(),
      }),
    )
    .output(checkedInTransaction(endpointResponse))
    .mutation(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      const ifMatch = ifMatchOf(ctx.headers);
      const checked = input.url === undefined ? undefined : await checkWebhookUrl(input.url, ctx.runtime.env.WEBHOOKS_ALLOW_PRIVATE);
      const body = await runMutation(ctx, actor, { status: 200, output: endpointResponse }, async (tx) => ({
        ok: true as const,
        data: await updateEndpoint(tx, actor, {
          id: input.id,
          url: checked,
          eventTypes: input.event_types,
          description: input.description,
          enabled: input.enabled,
          ifMatch,
        }),
      }));
      ctx.res.headers.ETag = etag(body.data.aggregateVersion);
      return body;
    }),

  delete: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'DELETE',
        path: '/webhooks/{id}',
        summary: 'Delete a webhook endpoint',
        description: 'Nothing more is delivered to it; its deliveries are deleted with it. Recorded as webhook_endpoint.deleted.',
      },
      auth,
      errorCodes: ['not_found', 'forbidden'],
    })
    .input(endpointPath)
    .output(
      checkedInTransaction(
        z
          .object({ ok: z.literal(true), data: z.object({ id: z.uuid(), deleted: z.literal(true) }) })
          .meta({ id: 'WebhookEndpointDeleted' }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      return runMutation(ctx, actor, { status: 200, output: z.any() }, async (tx) => ({
        ok: true as const,
        data: await deleteEndpoint(tx, actor, { id: input.id }),
      }));
    }),

  rotateSecret: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'POST',
        path: '/webhooks/{id}/rotate-secret',
        summary: 'Rotate the signing secret',
        description:
          'A new secret, in this response only. For 24 hours deliveries are signed with both (two `v1,` signatures ' +
          'in webhook-signature), so a receiver can switch without missing one. Recorded as ' +
          'webhook_endpoint.secret_rotated (without either secret).',
      },
      auth,
      errorCodes: ['not_found', 'forbidden'],
    })
    .input(endpointPath)
    .output(checkedInTransaction(rotatedResponse))
    .mutation(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      return runMutation(ctx, actor, { status: 200, output: rotatedResponse }, async (tx) => {
        const rotated = await rotateSecret(tx, actor, { id: input.id }, ctx.runtime.secrets.webhook);
        return {
          ok: true as const,
          data: { ...rotated.endpoint, secret: rotated.secret, previous_secret_expires_at: rotated.previous_secret_expires_at },
        };
      });
    }),

  test: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'POST',
        path: '/webhooks/{id}/test',
        summary: 'Send a test delivery',
        description:
          'Records a `webhook_endpoint.test` event, which this endpoint receives whatever its event_types, in sequence ' +
          'order behind what is already waiting; no other endpoint receives it. Answers 202 with the ' +
          'event; the attempt shows in GET /webhooks/{id}/deliveries.',
      },
      auth,
      successStatus: 202,
      errorCodes: ['not_found', 'forbidden'],
    })
    .input(endpointPath)
    .output(
      checkedInTransaction(
        z.object({ ok: z.literal(true), data: z.object({ event_id: z.uuid(), sequence: z.int() }) }).meta({ id: 'WebhookTestRequested' }),
      ),
    )
    .mutation(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      return runMutation(ctx, actor, { status: 202, output: z.any() }, async (tx) => ({
        ok: true as const,
        data: await requestTest(tx, actor, { id: input.id }),
      }));
    }),

  deliveries: memberProcedure
    .meta({
      openapi: {
        ...common,
        method: 'GET',
        path: '/webhooks/{id}/deliveries',
        summary: 'List delivery attempts',
        description: 'Every attempt at delivering an event to the endpoint, newest first, paged by cursor.',
      },
      auth,
      errorCodes: ['not_found', 'forbidden', 'invalid_cursor'],
    })
    .input(z.strictObject({ id: id(), cursor: pageParams.cursor, limit: pageParams.limit }))
    .output(z.object({ data: z.array(deliverySchema), meta: pageMeta }).meta({ id: 'WebhookDeliveryPage' }))
    .query(async ({ ctx, input }) => {
      const actor = await locate(ctx, input.id);
      const { db, secrets } = ctx.runtime;
      const scope = listScope('webhook_deliveries', actor.workspaceId, input);
      const after = readCursor(secrets.cursor, scope, input.cursor);
      const rows = await listDeliveries(db, input.id, { after, limit: input.limit + 1 });
      const { page, meta } = pageOf(rows, (r) => r.key, {
        secret: secrets.cursor,
        scope,
        limit: input.limit,
        workspaceId: actor.workspaceId,
      });
      return { data: page.map(({ key: _key, ...view }) => view), meta };
    }),
});
