/**
 * Ledger events as text rows: every column as PostgreSQL writes it (the payload as its stored
 * canonical text, or jsonb's text form for events appended before that was kept), from a page
 * query (read.ts) or from `COPY … TO STDOUT` in COPY's text format, and turned into LedgerEvent
 * objects where they are hashed (verification's worker threads).
 */
import { canonicalJson, ledgerEventCanonicalText, type LedgerEvent } from './canonical';

export interface EventTextRow {
  id: string;
  workspace_id: string;
  sequence: number | string;
  owner_id: string;
  aggregate_type: string;
  aggregate_id: string;
  aggregate_version: number | string;
  event_type: string;
  schema_version: number | string;
  actor_type: string;
  actor_id: string;
  payload: string;
  /** The payload is its exact canonical text (payload_text), not jsonb's: true, or `t` from COPY. */
  payload_canonical: boolean | string;
  payload_digest: string;
  occurred_at: string;
  idempotency_key: string | null;
  causation_id: string;
  correlation_id: string;
  context_manifest_digest: string;
  previous_hash: string;
  event_hash: string;
}

/** The columns of ledger_events in EventTextRow order: what a COPY of event rows selects. */
export const EVENT_TEXT_COLUMNS = [
  'id',
  'workspace_id',
  'sequence',
  'owner_id',
  'aggregate_type',
  'aggregate_id',
  'aggregate_version',
  'event_type',
  'schema_version',
  'actor_type',
  'actor_id',
  'payload',
  'payload_canonical',
  'payload_digest',
  'occurred_at',
  'idempotency_key',
  'causation_id',
  'correlation_id',
  'context_manifest_digest',
  'previous_hash',
  'event_hash',
] as const satisfies readonly (keyof EventTextRow)[];

/** What a COPY selects for each of EVENT_TEXT_COLUMNS (the payload from whichever column holds it). */
export const EVENT_COPY_SELECT = EVENT_TEXT_COLUMNS.map((c) =>
  c === 'payload' ? 'coalesce(payload_text, payload::text)' : c === 'payload_canonical' ? 'payload_text is not null' : c,
);

/** Whether the row's payload is its exact canonical text (hashed as it is) rather than jsonb's text form. */
export function canonicalPayload(r: Pick<EventTextRow, 'payload_canonical'>): boolean {
  return r.payload_canonical === true || r.payload_canonical === 't';
}

/** The payload's canonical text: as the row keeps it, or (an older row's jsonb) canonicalized. */
export function payloadTextOfRow(r: Pick<EventTextRow, 'payload' | 'payload_canonical'>): string {
  return canonicalPayload(r) ? r.payload : canonicalJson(JSON.parse(r.payload));
}

/**
 * The canonical form (RFC 8785) of the row's event without its eventHash, around `payloadText`:
 * ledgerEventCanonicalText over the columns, with the payload not parsed. What verification
 * hashes for every event read from the database.
 */
export function canonicalTextOfRow(r: EventTextRow, payloadText: string): string {
  return ledgerEventCanonicalText(eventFieldsOfRow(r), payloadText);
}

export function ledgerEventOfRow(r: EventTextRow): LedgerEvent {
  return { ...eventFieldsOfRow(r), payload: JSON.parse(r.payload) as Record<string, unknown> };
}

/** Every field of the row's event but its payload. */
function eventFieldsOfRow(r: EventTextRow): Omit<LedgerEvent, 'payload'> {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    sequence: Number(r.sequence),
    ownerId: r.owner_id,
    aggregateType: r.aggregate_type,
    aggregateId: r.aggregate_id,
    aggregateVersion: Number(r.aggregate_version),
    eventType: r.event_type,
    schemaVersion: Number(r.schema_version),
    actorType: r.actor_type as LedgerEvent['actorType'],
    actorId: r.actor_id,
    payloadDigest: r.payload_digest,
    occurredAtCanonical: r.occurred_at,
    idempotencyKey: r.idempotency_key,
    causationId: r.causation_id,
    correlationId: r.correlation_id,
    contextManifestDigest: r.context_manifest_digest,
    previousHash: r.previous_hash,
    eventHash: r.event_hash,
  };
}

// COPY's text format: a row per line, columns separated by tabs, \N for NULL, and a backslash
// before a backslash and before the control characters \b \f \n \r \t \v (all that PostgreSQL
// escapes on output; octal and hex escapes exist only on input).
const ESCAPED: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

function copyField(text: string): string | null {
  if (text === '\\N') return null;
  if (!text.includes('\\')) return text;
  return text.replace(/\\(.)/g, (_, code: string) => ESCAPED[code] ?? code);
}

/** The rows of COPY's text output (whole lines, each ending in a newline) of EVENT_TEXT_COLUMNS. */
export function eventRowsOfCopyText(text: string): EventTextRow[] {
  const rows: EventTextRow[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const fields = text.slice(start, end).split('\t');
    if (fields.length !== EVENT_TEXT_COLUMNS.length)
      throw new Error(`a COPY row has ${fields.length} columns, not ${EVENT_TEXT_COLUMNS.length}`);
    const row = {} as Record<string, string | null>;
    for (let i = 0; i < fields.length; i++) row[EVENT_TEXT_COLUMNS[i]!] = copyField(fields[i]!);
    rows.push(row as unknown as EventTextRow);
    start = end + 1;
  }
  return rows;
}
