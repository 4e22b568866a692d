/**
 * The projection tables as one in-memory state, and the pieces every aggregate's projection rules
 * are written with (server/domain/<aggregate>/events.ts). The rules are joined in
 * server/domain/events.ts; server/projections/state.ts replays the ledger through them (`fold`)
 * and reads the same state from the tables (`loadFromTables`), and the two must always agree.
 */
import type {
  artifacts,
  decisionAttention,
  decisionGrants,
  decisions,
  dedupClaims,
  importedReceipts,
  initiatives,
  ledgerWitnesses,
  milestones,
  receipts,
  runCheckpoints,
  runs,
  tasks,
  toolCalls,
  workstreams,
} from '@/db/schema';
import type { LedgerEvent } from '@/server/ledger/canonical';
import type { EventType, TypedEvent } from '@/server/ledger/event-types';

export interface ProjectionState {
  initiatives: Map<string, typeof initiatives.$inferSelect>;
  workstreams: Map<string, typeof workstreams.$inferSelect>;
  milestones: Map<string, typeof milestones.$inferSelect>;
  tasks: Map<string, typeof tasks.$inferSelect>;
  receipts: Map<string, typeof receipts.$inferSelect>;
  runs: Map<string, typeof runs.$inferSelect>;
  checkpoints: Map<string, typeof runCheckpoints.$inferSelect>;
  claims: Map<string, typeof dedupClaims.$inferSelect>;
  imported: Map<string, typeof importedReceipts.$inferSelect>;
  decisions: Map<string, typeof decisions.$inferSelect>;
  attention: Map<string, typeof decisionAttention.$inferSelect>;
  grants: Map<string, typeof decisionGrants.$inferSelect>;
  artifacts: Map<string, typeof artifacts.$inferSelect>;
  /** The witnesses named and not removed (server/domain/witnesses). */
  witnesses: Map<string, typeof ledgerWitnesses.$inferSelect>;
  /** The MCP gateway's calls of upstream tools (server/domain/tool-calls). */
  toolCalls: Map<string, typeof toolCalls.$inferSelect>;
  /** The event that created each receipt: evidence carries its id and hash. */
  receiptEvents: Map<string, { eventId: string; eventHash: string; sequence: number }>;
}

export function emptyState(): ProjectionState {
  return {
    initiatives: new Map(),
    workstreams: new Map(),
    milestones: new Map(),
    tasks: new Map(),
    receipts: new Map(),
    runs: new Map(),
    checkpoints: new Map(),
    claims: new Map(),
    imported: new Map(),
    decisions: new Map(),
    attention: new Map(),
    grants: new Map(),
    artifacts: new Map(),
    witnesses: new Map(),
    toolCalls: new Map(),
    receiptEvents: new Map(),
  };
}

/** The slices, one object: each slice's members, in turn. */
type Joined<S extends readonly object[]> = S extends readonly [infer H, ...infer R extends readonly object[]] ? H & Joined<R> : unknown;

/**
 * The aggregates' slices (of the registry, or of the rules) as one object. An event type two
 * slices declare would silently be one of them; it throws instead, when the module loads.
 */
export function joinSlices<S extends readonly object[]>(...slices: S): Joined<S> {
  const joined: Record<string, unknown> = {};
  for (const slice of slices) {
    for (const [type, member] of Object.entries(slice)) {
      if (Object.hasOwn(joined, type)) throw new Error(`event type ${type} is declared by two aggregates' slices`);
      joined[type] = member;
    }
  }
  return joined as Joined<S>;
}

/** What an event of type T does to the state. */
export type ProjectionRule<T extends EventType> = (state: ProjectionState, event: TypedEvent<T>) => void;

/** One rule for each type of a slice of the registry: a slice's type without its rule does not compile. */
export type RulesOf<Slice> = { [T in Extract<keyof Slice, EventType>]: ProjectionRule<T> };

/**
 * Row bookkeeping that comes from the event, not the payload: its workspace, the aggregate's
 * version after it, and when. The write passes the same values (version 1 for a new row, the
 * instant it appends at), so writing a row and replaying its event give one row.
 */
export interface RowMeta {
  workspaceId: string;
  version: number;
  at: Date;
}

export const metaOf = (event: TypedEvent<EventType>): RowMeta => ({
  workspaceId: event.workspaceId,
  version: event.aggregateVersion,
  at: new Date(event.occurredAtCanonical),
});

export function must<T>(row: T | undefined, event: Pick<LedgerEvent, 'sequence' | 'eventType' | 'aggregateType' | 'aggregateId'>): T {
  if (!row)
    throw new Error(
      `event ${event.sequence} (${event.eventType}) changes ${event.aggregateType} ${event.aggregateId}, which does not exist`,
    );
  return row;
}

/** Sets `changes` on an existing row, with the event's version and instant. */
export function touch<R extends { version: number; updatedAt: Date }>(row: R, changes: Partial<R>, event: TypedEvent<EventType>): void {
  Object.assign(row, changes, { version: event.aggregateVersion, updatedAt: new Date(event.occurredAtCanonical) });
}

/** For the event types that change no projection table (tenancy, credentials and webhook endpoints are not projections). */
export const unprojected = () => {};
