/** Reading a workspace's ledger in sequence order, as LedgerEvent objects. */
import { and, asc, desc, eq, gt, inArray, lte, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '@/db';
import { compiled } from '@/db/compiled';
import { ledgerEvents, ledgerHeads } from '@/db/schema';
import type { LedgerEvent } from './canonical';
import { canonicalPayload, type EventTextRow } from './event-rows';

type EventRow = typeof ledgerEvents.$inferSelect;

/** The row as served and hashed, with the fields in a fixed, readable order. */
function toLedgerEvent(row: EventRow): LedgerEvent {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    sequence: row.sequence,
    ownerId: row.ownerId,
    aggregateType: row.aggregateType,
    aggregateId: row.aggregateId,
    aggregateVersion: row.aggregateVersion,
    eventType: row.eventType,
    schemaVersion: row.schemaVersion,
    actorType: row.actorType,
    actorId: row.actorId,
    // Newer events keep the payload as its canonical text, older ones as jsonb.
    payload: (row.payload ?? JSON.parse(row.payloadText!)) as Record<string, unknown>,
    payloadDigest: row.payloadDigest,
    occurredAtCanonical: row.occurredAtCanonical,
    idempotencyKey: row.idempotencyKey,
    causationId: row.causationId,
    correlationId: row.correlationId,
    contextManifestDigest: row.contextManifestDigest,
    previousHash: row.previousHash,
    eventHash: row.eventHash,
  };
}

export interface ReadOptions {
  /** Events with a sequence greater than this. */
  after: number;
  limit: number;
  /** Only these event types (all when empty). */
  types?: readonly string[];
}

export async function readEvents(db: Executor, workspaceId: string, opts: ReadOptions): Promise<LedgerEvent[]> {
  const conditions = [eq(ledgerEvents.workspaceId, workspaceId), gt(ledgerEvents.sequence, opts.after)];
  if (opts.types && opts.types.length > 0) conditions.push(inArray(ledgerEvents.eventType, [...opts.types]));
  const rows = await db
    .select()
    .from(ledgerEvents)
    .where(and(...conditions))
    .orderBy(asc(ledgerEvents.sequence))
    .limit(opts.limit);
  return rows.map(toLedgerEvent);
}

/**
 * Events newest first, for browsing (the web interface's /ledger): those at or before `atOrBefore`
 * (all when absent), of one event type and of one aggregate when given.
 */
export async function readEventsNewestFirst(
  db: Executor,
  workspaceId: string,
  opts: { atOrBefore?: number; eventType?: string; aggregateId?: string; limit: number },
): Promise<LedgerEvent[]> {
  const conditions: SQL[] = [eq(ledgerEvents.workspaceId, workspaceId)];
  if (opts.atOrBefore !== undefined) conditions.push(lte(ledgerEvents.sequence, opts.atOrBefore));
  if (opts.eventType) conditions.push(eq(ledgerEvents.eventType, opts.eventType));
  if (opts.aggregateId) conditions.push(eq(ledgerEvents.aggregateId, opts.aggregateId));
  const rows = await db
    .select()
    .from(ledgerEvents)
    .where(and(...conditions))
    .orderBy(desc(ledgerEvents.sequence))
    .limit(opts.limit);
  return rows.map(toLedgerEvent);
}

export async function readHead(db: Executor, workspaceId: string): Promise<{ sequence: number; headHash: string } | null> {
  const [head] = await db
    .select({ sequence: ledgerHeads.sequence, headHash: ledgerHeads.headHash })
    .from(ledgerHeads)
    .where(eq(ledgerHeads.workspaceId, workspaceId));
  return head ?? null;
}

/**
 * A page of events as JSON text, each event's fields in LedgerEvent order (the order the API
 * documents and serves), without turning rows into objects and back: the payload comes from
 * PostgreSQL as text and goes out as it is, with the spaces of jsonb's text form removed. The
 * JSON pages of GET /events/stream are served from this (server/api/event-page.ts); on a page of
 * 100 events parsing and re-serialising the payloads was most of the request's time.
 */
export async function readEventsJson(db: Executor, workspaceId: string, opts: ReadOptions): Promise<{ sequence: number; json: string }[]> {
  const rows = await readEventRows(db, workspaceId, opts);
  return rows.map((r) => ({
    sequence: Number(r.sequence),
    json:
      `{"id":${JSON.stringify(r.id)},"workspaceId":${JSON.stringify(r.workspace_id)},"sequence":${Number(r.sequence)}` +
      `,"ownerId":${JSON.stringify(r.owner_id)},"aggregateType":${JSON.stringify(r.aggregate_type)}` +
      `,"aggregateId":${JSON.stringify(r.aggregate_id)},"aggregateVersion":${Number(r.aggregate_version)}` +
      `,"eventType":${JSON.stringify(r.event_type)},"schemaVersion":${Number(r.schema_version)}` +
      `,"actorType":${JSON.stringify(r.actor_type)},"actorId":${JSON.stringify(r.actor_id)}` +
      `,"payload":${canonicalPayload(r) ? r.payload : compactJsonb(r.payload)}` +
      `,"payloadDigest":${JSON.stringify(r.payload_digest)},"occurredAtCanonical":${JSON.stringify(r.occurred_at)}` +
      `,"idempotencyKey":${JSON.stringify(r.idempotency_key)},"causationId":${JSON.stringify(r.causation_id)}` +
      `,"correlationId":${JSON.stringify(r.correlation_id)},"contextManifestDigest":${JSON.stringify(r.context_manifest_digest)}` +
      `,"previousHash":${JSON.stringify(r.previous_hash)},"eventHash":${JSON.stringify(r.event_hash)}}`,
  }));
}

/** A page of events as text rows (event-rows.ts): what verification's worker threads read on PGlite. */
export function readEventRows(db: Executor, workspaceId: string, opts: ReadOptions): Promise<EventTextRow[]> {
  const values = { workspaceId, after: opts.after, limit: opts.limit };
  return opts.types && opts.types.length > 0
    ? pageOfTypesStatement(db, { ...values, types: opts.types.join(',') })
    : pageStatement(db, values);
}

const textColumns = {
  id: ledgerEvents.id,
  workspace_id: ledgerEvents.workspaceId,
  sequence: ledgerEvents.sequence,
  owner_id: ledgerEvents.ownerId,
  aggregate_type: ledgerEvents.aggregateType,
  aggregate_id: ledgerEvents.aggregateId,
  aggregate_version: ledgerEvents.aggregateVersion,
  event_type: ledgerEvents.eventType,
  schema_version: ledgerEvents.schemaVersion,
  actor_type: ledgerEvents.actorType,
  actor_id: ledgerEvents.actorId,
  payload: sql<string>`coalesce(${ledgerEvents.payloadText}, ${ledgerEvents.payload}::text)`.as('payload'),
  payload_canonical: sql<boolean>`${ledgerEvents.payloadText} is not null`.as('payload_canonical'),
  payload_digest: ledgerEvents.payloadDigest,
  occurred_at: ledgerEvents.occurredAtCanonical,
  idempotency_key: ledgerEvents.idempotencyKey,
  causation_id: ledgerEvents.causationId,
  correlation_id: ledgerEvents.correlationId,
  context_manifest_digest: ledgerEvents.contextManifestDigest,
  previous_hash: ledgerEvents.previousHash,
  event_hash: ledgerEvents.eventHash,
};

const pageStatement = compiled<{ workspaceId: string; after: number; limit: number }, EventTextRow>((db, p) =>
  db
    .select(textColumns)
    .from(ledgerEvents)
    .where(and(eq(ledgerEvents.workspaceId, p('workspaceId')), gt(ledgerEvents.sequence, p('after'))))
    .orderBy(asc(ledgerEvents.sequence))
    .limit(p('limit')),
);

// Event types cannot contain a comma (EVENT_TYPE_PATTERN): the list travels as one text value,
// the same on both engines.
const pageOfTypesStatement = compiled<{ workspaceId: string; after: number; limit: number; types: string }, EventTextRow>((db, p) =>
  db
    .select(textColumns)
    .from(ledgerEvents)
    .where(
      and(
        eq(ledgerEvents.workspaceId, p('workspaceId')),
        gt(ledgerEvents.sequence, p('after')),
        sql`${ledgerEvents.eventType} = any(string_to_array(${p('types')}::text, ','))`,
      ),
    )
    .orderBy(asc(ledgerEvents.sequence))
    .limit(p('limit')),
);

/**
 * jsonb's text form without its spaces: PostgreSQL writes `{"a": 1, "b": [1, 2]}`, with a single
 * space after each colon and comma and nowhere else outside strings; strings are copied as they are.
 */
export function compactJsonb(text: string): string {
  if (text.indexOf(' ') < 0) return text;
  let out = '';
  let start = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // A string: to its closing quote, stepping over escapes.
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92) i += 2;
        else if (d === 34) break;
        else i++;
      }
      i++;
    } else if (c === 32) {
      out += text.slice(start, i);
      i++;
      start = i;
    } else i++;
  }
  return out + text.slice(start);
}
