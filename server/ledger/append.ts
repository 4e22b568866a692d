/**
 * Appending to a workspace's ledger. Callers pass the facts (aggregate, type, payload); the actor
 * and its trace fill in who and why; the SQL function ledger_append assigns sequence,
 * aggregateVersion and previousHash under the workspace's head-row lock and seals the hash.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Tx } from '@/db';
import { compiledSql } from '@/db/compiled';
import type { Actor } from '@/server/domain/actor';
import { digestOf, eventCanonicalSegments, type LedgerEvent, type UnsealedEvent } from './canonical';

const EVENT_TYPE_PATTERN = /^[a-z][a-z0-9_.-]{0,99}$/;
export const CURRENT_SCHEMA_VERSION = 1;

export interface NewEvent {
  aggregateType: string;
  aggregateId: string;
  eventType: string;
  payload: Record<string, unknown>;
  schemaVersion?: number;
}

interface AppendRow {
  r_id: string;
  r_sequence: number | string;
  r_aggregate_version: number;
  r_previous_hash: string;
  r_event_hash: string;
}

/**
 * Appends `events` in order, inside the caller's transaction (one round trip). Returns the sealed
 * events. The events commit or vanish with the caller's other writes.
 *
 * `at` is when the change happened: services pass the same instant they write into their rows
 * (created_at, updated_at), so rebuilding the rows from the events gives back the same values.
 */
export async function appendEvents(tx: Tx, actor: Actor, events: readonly NewEvent[], at: Date = new Date()): Promise<LedgerEvent[]> {
  if (events.length === 0) return [];
  const occurredAtCanonical = at.toISOString();
  const unsealed: UnsealedEvent[] = events.map((e) => {
    if (!EVENT_TYPE_PATTERN.test(e.eventType)) throw new Error(`invalid event type ${e.eventType}`);
    return {
      id: randomUUID(),
      workspaceId: actor.workspaceId,
      ownerId: actor.ownerId,
      aggregateType: e.aggregateType,
      aggregateId: e.aggregateId,
      eventType: e.eventType,
      schemaVersion: e.schemaVersion ?? CURRENT_SCHEMA_VERSION,
      actorType: actor.type,
      actorId: actor.id,
      payload: e.payload,
      payloadDigest: digestOf(e.payload),
      occurredAtCanonical,
      idempotencyKey: actor.trace.idempotencyKey,
      causationId: actor.trace.requestId,
      correlationId: actor.trace.correlationId,
      contextManifestDigest: actor.trace.contextManifestDigest,
    };
  });
  const input = unsealed.map((e) => ({ ...e, canonical: eventCanonicalSegments(e) }));
  const rows = await appendStatement(tx, { workspaceId: actor.workspaceId, events: JSON.stringify(input) });
  return unsealed.map((e, i) => {
    const row = rows[i];
    if (!row || row.r_id !== e.id) throw new Error('ledger_append returned an unexpected row');
    return {
      ...e,
      sequence: Number(row.r_sequence),
      aggregateVersion: row.r_aggregate_version,
      previousHash: row.r_previous_hash,
      eventHash: row.r_event_hash,
    };
  });
}

/** Every write runs it: built once (db/compiled.ts). */
const appendStatement = compiledSql<{ workspaceId: string; events: string }, AppendRow>(
  (p) => sql`select * from ledger_append(${p('workspaceId')}::uuid, ${p('events')}::jsonb)`,
);

/**
 * Takes the workspace's append lock now instead of at the append. Services that change existing
 * rows of the work hierarchy or runs call it first: they all end up holding this lock anyway, and
 * taking it before any row lock gives them one lock order, so they can never deadlock each other.
 */
export async function lockWorkspaceLedger(tx: Tx, workspaceId: string): Promise<void> {
  await tx.execute(sql`select 1 from ledger_heads where workspace_id = ${workspaceId} for update`);
}
