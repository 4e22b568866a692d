/** Reading a workspace's ledger in sequence order, as LedgerEvent objects. */
import { and, asc, eq, gt, inArray } from 'drizzle-orm';
import type { Executor } from '@/db';
import { ledgerEvents, ledgerHeads } from '@/db/schema';
import type { LedgerEvent } from './canonical';

type EventRow = typeof ledgerEvents.$inferSelect;

/** The row as served and hashed, with the fields in a fixed, readable order. */
export function toLedgerEvent(row: EventRow): LedgerEvent {
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
    payload: row.payload as Record<string, unknown>,
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

export async function readHead(db: Executor, workspaceId: string): Promise<{ sequence: number; headHash: string } | null> {
  const [head] = await db
    .select({ sequence: ledgerHeads.sequence, headHash: ledgerHeads.headHash })
    .from(ledgerHeads)
    .where(eq(ledgerHeads.workspaceId, workspaceId));
  return head ?? null;
}
