/**
 * The event registry, joined from the aggregates' slices (server/domain/<aggregate>/events.ts):
 * every event type with its aggregate type and payload, and every type's projection rule. The
 * ledger types appends from it (server/ledger/event-types.ts EventRegistry, filled in here by
 * declaration merging) without importing the domain; the replay (server/projections/state.ts)
 * applies the rules. A slice left out, or a type of a slice without its rule, does not compile.
 */
import { z } from 'zod';
import type { LedgerEvent } from '@/server/ledger/canonical';
import type { EventType, NewEvent, PayloadOf, TypedEvent } from '@/server/ledger/event-types';
import { joinSlices, type ProjectionRule, type ProjectionState } from './projection';
import { apiKeyEvents, apiKeyRules } from './api-keys/events';
import { artifactEvents, artifactRules } from './artifacts/events';
import { decisionEvents, decisionRules } from './decisions/events';
import { dedupEvents, dedupRules } from './dedup/events';
import { grantEvents, grantRules } from './grants/events';
import { hierarchyEvents, hierarchyRules } from './hierarchy/events';
import { mcpServerEvents, mcpServerRules } from './mcp-servers/events';
import { passkeyEvents, passkeyRules } from './passkeys/events';
import { receiptEvents, receiptRules } from './receipts/events';
import { runEvents, runRules } from './runs/events';
import { webhookEndpointEvents, webhookEndpointRules } from './webhooks/events';
import { toolCallEvents, toolCallRules } from './tool-calls/events';
import { witnessEvents, witnessRules } from './witnesses/events';
import { workspaceEvents, workspaceRules } from './workspaces/events';

const EVENTS = joinSlices(
  workspaceEvents,
  passkeyEvents,
  apiKeyEvents,
  webhookEndpointEvents,
  hierarchyEvents,
  runEvents,
  receiptEvents,
  dedupEvents,
  decisionEvents,
  grantEvents,
  artifactEvents,
  witnessEvents,
  toolCallEvents,
  mcpServerEvents,
);

type Registry = typeof EVENTS;

declare module '@/server/ledger/event-types' {
  // The composed registry is the ledger's: every append is typed by it.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging adds the registry's members
  interface EventRegistry extends Registry {}
}

/** What each event type does to the state: one rule per type of the registry, so a new type without its rule does not compile. */
export type ProjectionRules = { [T in EventType]: ProjectionRule<T> };

const RULES: ProjectionRules = joinSlices(
  workspaceRules,
  passkeyRules,
  apiKeyRules,
  webhookEndpointRules,
  hierarchyRules,
  runRules,
  receiptRules,
  dedupRules,
  decisionRules,
  grantRules,
  artifactRules,
  witnessRules,
  toolCallRules,
  mcpServerRules,
);

function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENTS, type);
}

/**
 * An event of a type chosen at run time (a status change's type, say), with its aggregate type from
 * the registry. For one type known where it is written, an object literal says the same.
 */
export function newEvent<T extends EventType>(eventType: T, aggregateId: string, payload: PayloadOf<T>): NewEvent {
  // The aggregate type is the registry's for eventType, so the three go together, which TypeScript
  // cannot follow through a T that is itself a union.
  return { aggregateType: EVENTS[eventType].aggregate, aggregateId, eventType, payload } as NewEvent;
}

/**
 * The stored event with its payload read as its type says: parsed with the type's schema, for the
 * types whose payload is read back. A payload its schema refuses fails here, naming the event.
 */
function readEvent<T extends EventType>(event: LedgerEvent, eventType: T): TypedEvent<T> {
  const { schema } = EVENTS[eventType];
  if (!schema) return { ...event, eventType } as TypedEvent<T>;
  const parsed = (schema as z.ZodType).safeParse(event.payload);
  if (!parsed.success) {
    throw new Error(`event ${event.sequence} (${eventType}) carries a payload its type does not read: ${z.prettifyError(parsed.error)}`);
  }
  return { ...event, eventType, payload: parsed.data } as TypedEvent<T>;
}

// Generic so that the rule looked up for the event's type takes that very event (T ties the two).
function applyRule<T extends EventType>(state: ProjectionState, event: TypedEvent<T>): void {
  RULES[event.eventType](state, event);
}

/**
 * Applies one event to the state, its payload read as its type says. Throws on an event type the
 * registry does not know, so none is silently lost.
 */
export function applyEvent(state: ProjectionState, event: LedgerEvent): void {
  if (!isEventType(event.eventType)) {
    throw new Error(`no projection rule for event type ${event.eventType} (sequence ${event.sequence})`);
  }
  applyRule(state, readEvent(event, event.eventType));
}
