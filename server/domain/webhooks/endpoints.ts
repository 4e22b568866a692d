/**
 * Webhook endpoints of a workspace: created, read, changed, deleted, their secret rotated, a test
 * delivery asked for. Each change is a ledger event in the same transaction; the signing secret
 * is in no event (it is returned once, by create and rotate-secret). Event payloads carry where
 * the URL goes and a digest of it, never the URL itself (url-target.ts).
 *
 * The URL is checked (server/webhooks/url-policy.ts) by the caller before the transaction: the
 * check resolves the host, and no transaction should wait on DNS.
 */
import { randomUUID } from 'node:crypto';
import { and, count, desc, eq, sql } from 'drizzle-orm';
import { query, type Executor, type Tx } from '@/db';
import { webhookDeliveries, webhookEndpoints } from '@/db/schema';
import { AppError } from '@/server/errors';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import { encryptSecret } from '@/server/keys/cipher';
import { generateSigningSecret } from '@/server/keys/webhook-secrets';
import type { Actor } from '../actor';
import { targetForEvents } from '../url-target';
import { olderThan, type CreatedKey } from '../paging';

/** Endpoints one workspace may have. */
export const MAX_ENDPOINTS_PER_WORKSPACE = 20;
/** How long the secret replaced by a rotation still signs deliveries (beside the new one). */
const ROTATION_GRACE_MS = 24 * 3_600_000;

type EndpointRow = typeof webhookEndpoints.$inferSelect;

export interface WebhookEndpointView {
  id: string;
  workspace_id: string;
  url: string;
  description: string;
  event_types: string[];
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  aggregateVersion: number;
  created_at: string;
  updated_at: string;
  delivery: {
    delivered_sequence: number;
    attempts: number;
    failing_since: string | null;
    next_attempt_at: string | null;
    last_success_at: string | null;
  };
}

function endpointView(row: EndpointRow): WebhookEndpointView {
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    url: row.url,
    description: row.description,
    event_types: row.eventTypes,
    status: row.status,
    disabled_reason: row.disabledReason,
    aggregateVersion: row.version,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    delivery: {
      delivered_sequence: row.deliveredSequence,
      attempts: row.attempts,
      failing_since: row.failingSince?.toISOString() ?? null,
      next_attempt_at: row.status === 'enabled' && row.attempts > 0 ? row.nextAttemptAt.toISOString() : null,
      last_success_at: row.lastSuccessAt?.toISOString() ?? null,
    },
  };
}

const noSuchEndpoint = () => new AppError('not_found', 'No such webhook endpoint in your workspace.');

async function lockedEndpoint(tx: Tx, actor: Actor, id: string): Promise<EndpointRow> {
  const [row] = await tx
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.workspaceId, actor.workspaceId)))
    .for('update');
  if (!row) throw noSuchEndpoint();
  return row;
}

export interface CreateEndpointInput {
  /** Checked already (checkWebhookUrl). */
  url: string;
  eventTypes: string[];
  description: string;
}

/**
 * Creates an endpoint. Its cursor starts at its own `webhook_endpoint.created` event: it receives
 * what happens from then on, not the workspace's history.
 */
export async function createEndpoint(
  tx: Tx,
  actor: Actor,
  input: CreateEndpointInput,
  secretKey: string,
): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
  // The workspace lock serialises creations, so the count below holds until commit.
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [existing] = await tx.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.workspaceId, actor.workspaceId));
  if ((existing?.n ?? 0) >= MAX_ENDPOINTS_PER_WORKSPACE) {
    throw new AppError('conflict', `A workspace has at most ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints; delete one first.`);
  }
  const id = randomUUID();
  const secret = generateSigningSecret();
  const now = new Date();
  const [event] = await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'webhook_endpoint',
        aggregateId: id,
        eventType: 'webhook_endpoint.created',
        payload: { id, target: targetForEvents(input.url), event_types: input.eventTypes, description: input.description },
      },
    ],
    now,
  );
  const [row] = await tx
    .insert(webhookEndpoints)
    .values({
      id,
      workspaceId: actor.workspaceId,
      url: input.url,
      description: input.description,
      eventTypes: input.eventTypes,
      secretCipher: encryptSecret(secretKey, secret),
      deliveredSequence: event!.sequence,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return { endpoint: endpointView(row!), secret };
}

export async function getEndpoint(db: Executor, workspaceId: string, id: string): Promise<WebhookEndpointView> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.workspaceId, workspaceId)));
  if (!row) throw noSuchEndpoint();
  return endpointView(row);
}

/** The workspace's endpoints, newest first, after `after` (keyset paging, as every list). */
export async function listEndpoints(
  db: Executor,
  workspaceId: string,
  q: { after?: CreatedKey; limit: number },
): Promise<(WebhookEndpointView & { key: CreatedKey })[]> {
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.workspaceId, workspaceId), olderThan(webhookEndpoints.createdAt, webhookEndpoints.id, q.after)))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
    .limit(q.limit);
  return rows.map((r) => ({ ...endpointView(r), key: { createdAt: r.createdAt, id: r.id } }));
}

export interface UpdateEndpointInput {
  id: string;
  /** Checked already (checkWebhookUrl). */
  url?: string;
  eventTypes?: string[];
  description?: string;
  /**
   * false disables it (nothing is delivered; events keep collecting behind its cursor); true
   * enables it again, retrying the event it stopped at now, with a fresh retry window.
   */
  enabled?: boolean;
  /** If-Match: the version the change is based on (412 when the endpoint has moved past it). */
  ifMatch?: number;
}

/** An event updateEndpoint appends: the type with its payload (the endpoint is the aggregate). */
type EndpointChange = {
  [T in 'webhook_endpoint.updated' | 'webhook_endpoint.enabled' | 'webhook_endpoint.disabled']: { eventType: T; payload: PayloadOf<T> };
}['webhook_endpoint.updated' | 'webhook_endpoint.enabled' | 'webhook_endpoint.disabled'];

/** Changes what was given; a change that changes nothing appends nothing. */
export async function updateEndpoint(tx: Tx, actor: Actor, input: UpdateEndpointInput): Promise<WebhookEndpointView> {
  const row = await lockedEndpoint(tx, actor, input.id);
  if (input.ifMatch !== undefined && input.ifMatch !== row.version) {
    throw new AppError('precondition_failed', `The endpoint is at version ${row.version}, not ${input.ifMatch}: read it again.`, {
      version: row.version,
    });
  }
  const changes: Partial<EndpointRow> = {};
  const changed: Omit<PayloadOf<'webhook_endpoint.updated'>, 'id'> = {};
  if (input.url !== undefined && input.url !== row.url) {
    changes.url = input.url;
    changed.target = targetForEvents(input.url);
  }
  if (input.eventTypes !== undefined && input.eventTypes.join('\n') !== row.eventTypes.join('\n')) {
    changes.eventTypes = input.eventTypes;
    changed.event_types = input.eventTypes;
  }
  if (input.description !== undefined && input.description !== row.description) {
    changes.description = input.description;
    changed.description = input.description;
  }
  const events: EndpointChange[] = [];
  if (Object.keys(changed).length > 0) events.push({ eventType: 'webhook_endpoint.updated', payload: { id: row.id, ...changed } });
  const now = new Date();
  if (input.enabled === true && row.status === 'disabled') {
    Object.assign(changes, { status: 'enabled', disabledReason: null, attempts: 0, failingSince: null, nextAttemptAt: now });
    events.push({ eventType: 'webhook_endpoint.enabled', payload: { id: row.id, resumes_after_sequence: row.deliveredSequence } });
  } else if (input.enabled === false && row.status === 'enabled') {
    const reason = 'Disabled by a member of the workspace.';
    Object.assign(changes, { status: 'disabled', disabledReason: reason, leasedBy: null, leaseUntil: null });
    events.push({ eventType: 'webhook_endpoint.disabled', payload: { id: row.id, reason, by: actor.type } });
  }
  if (events.length === 0) return endpointView(row);
  const appended = await appendEvents(
    tx,
    actor,
    events.map((e): NewEvent => ({ aggregateType: 'webhook_endpoint', aggregateId: row.id, ...e })),
    now,
  );
  const [updated] = await tx
    .update(webhookEndpoints)
    .set({ ...changes, updatedAt: now, version: appended.at(-1)!.aggregateVersion })
    .where(eq(webhookEndpoints.id, row.id))
    .returning();
  return endpointView(updated!);
}

export async function deleteEndpoint(tx: Tx, actor: Actor, input: { id: string }): Promise<{ id: string; deleted: true }> {
  const row = await lockedEndpoint(tx, actor, input.id);
  await appendEvents(tx, actor, [
    {
      aggregateType: 'webhook_endpoint',
      aggregateId: row.id,
      eventType: 'webhook_endpoint.deleted',
      payload: { id: row.id, target: targetForEvents(row.url) },
    },
  ]);
  await tx.delete(webhookEndpoints).where(eq(webhookEndpoints.id, row.id));
  return { id: row.id, deleted: true };
}

/**
 * A new signing secret, returned once. The previous one keeps signing beside it for
 * ROTATION_GRACE_MS, so receivers can switch without missing a delivery.
 */
export async function rotateSecret(
  tx: Tx,
  actor: Actor,
  input: { id: string },
  secretKey: string,
): Promise<{ endpoint: WebhookEndpointView; secret: string; previous_secret_expires_at: string }> {
  const row = await lockedEndpoint(tx, actor, input.id);
  const secret = generateSigningSecret();
  const now = new Date();
  const expires = new Date(now.getTime() + ROTATION_GRACE_MS);
  const [event] = await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'webhook_endpoint',
        aggregateId: row.id,
        eventType: 'webhook_endpoint.secret_rotated',
        payload: { id: row.id, previous_secret_expires_at: expires.toISOString() },
      },
    ],
    now,
  );
  const [updated] = await tx
    .update(webhookEndpoints)
    .set({
      secretCipher: encryptSecret(secretKey, secret),
      previousSecretCipher: row.secretCipher,
      previousSecretExpiresAt: expires,
      updatedAt: now,
      version: event!.aggregateVersion,
    })
    .where(eq(webhookEndpoints.id, row.id))
    .returning();
  return { endpoint: endpointView(updated!), secret, previous_secret_expires_at: expires.toISOString() };
}

/**
 * Asks for a test delivery: appends `webhook_endpoint.test`, which this endpoint receives in
 * sequence order like any event, whatever its event_types; no other endpoint receives it. Its
 * delivery shows in the endpoint's deliveries.
 */
export async function requestTest(tx: Tx, actor: Actor, input: { id: string }): Promise<{ event_id: string; sequence: number }> {
  const row = await lockedEndpoint(tx, actor, input.id);
  const [event] = await appendEvents(tx, actor, [
    {
      aggregateType: 'webhook_endpoint',
      aggregateId: row.id,
      eventType: 'webhook_endpoint.test',
      payload: { id: row.id, message: 'A test delivery, asked for by a member of the workspace or an agent.' },
    },
  ]);
  await tx.update(webhookEndpoints).set({ version: event!.aggregateVersion }).where(eq(webhookEndpoints.id, row.id));
  return { event_id: event!.id, sequence: event!.sequence };
}

export interface DeliveryView {
  id: string;
  event_id: string;
  sequence: number;
  event_type: string;
  attempt: number;
  succeeded: boolean;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
  duration_ms: number;
  attempted_at: string;
  next_attempt_at: string | null;
}

/** An endpoint's delivery attempts, newest first. */
export async function listDeliveries(
  db: Executor,
  endpointId: string,
  q: { after?: CreatedKey; limit: number },
): Promise<(DeliveryView & { key: CreatedKey })[]> {
  const rows = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, endpointId), olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, q.after)))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(q.limit);
  return rows.map((r) => ({
    key: { createdAt: r.createdAt, id: r.id },
    id: r.id,
    event_id: r.eventId,
    sequence: r.sequence,
    event_type: r.eventType,
    attempt: r.attempt,
    succeeded: r.succeeded,
    status_code: r.statusCode,
    error: r.error,
    response_excerpt: r.responseExcerpt,
    duration_ms: r.durationMs,
    attempted_at: r.createdAt.toISOString(),
    next_attempt_at: r.nextAttemptAt?.toISOString() ?? null,
  }));
}

/**
 * Deletes up to `limit` delivery attempts older than `days` days (the retention job,
 * server/retention.ts, with DELIVERY_LOG_DAYS).
 */
export async function pruneDeliveries(db: Executor, days: number, now = new Date(), limit = 1000): Promise<number> {
  const before = new Date(now.getTime() - days * 86_400_000).toISOString();
  const [row] = await query<{ deleted: number | string }>(
    db,
    sql`with gone as (
          delete from webhook_deliveries where id in (
            select id from webhook_deliveries where created_at < ${before}::timestamptz limit ${limit})
          returning 1)
        select count(*) as deleted from gone`,
  );
  return Number(row?.deleted ?? 0);
}

/** Whether an endpoint subscribing to `patterns` receives an event of `eventType`. */
export function subscribes(patterns: readonly string[], eventType: string): boolean {
  return patterns.some((p) => p === '*' || p === eventType || (p.endsWith('.*') && eventType.startsWith(p.slice(0, -1))));
}
