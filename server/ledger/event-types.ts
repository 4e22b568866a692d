/**
 * The machinery of the event registry: how an event type is declared (its aggregate type and its
 * payload), and the types appending and reading take from the registry. The registry itself is the
 * domain's: each aggregate's folder declares its slice (server/domain/<aggregate>/events.ts), and
 * server/domain/events.ts joins them and fills in `EventRegistry` below by declaration merging, so
 * the ledger types every append without importing any aggregate. A misspelled type, a payload of
 * the wrong shape or a new type without its projection rule or its words does not compile.
 *
 * A payload that something reads back (the projections) has a zod schema: the replay parses it
 * with that, and its type is what services must write. The ledger replays every payload it was
 * ever given, so a schema accepts each shape its type was ever written in (a field older events
 * lack gets the value the table holds for them); it never refuses a payload the replay could use.
 * A payload nothing reads back has its type alone. Appending parses nothing: the types hold at
 * compile time, and the append is on every write's path.
 */
import type { z } from 'zod';
import type { LedgerEvent } from './canonical';

/** A type whose payload is read back: parsed with `schema` where it is read. */
export interface ReadBack<A extends string, P> {
  readonly aggregate: A;
  readonly schema: z.ZodType<P>;
}

/** A type whose payload nothing reads back: `payload` is its type only, never set. */
export interface WriteOnly<A extends string, P> {
  readonly aggregate: A;
  readonly schema: null;
  readonly payload?: P;
}

export const readBack = <A extends string, P>(aggregate: A, schema: z.ZodType<P>): ReadBack<A, P> => ({ aggregate, schema });
export const writeOnly =
  <P>() =>
  <A extends string>(aggregate: A): WriteOnly<A, P> => ({ aggregate, schema: null });

/**
 * Every event type and its spec, as server/domain/events.ts composes them from the aggregates'
 * slices (it extends this interface with the composed registry's type). Empty here on purpose:
 * the ledger knows how events are typed, the domain knows which there are.
 *
 * @public (used through declaration merging, which knip does not follow)
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by declaration merging
export interface EventRegistry {}

export type EventType = keyof EventRegistry & string;
type Spec<T extends EventType> = EventRegistry[T];

/** The aggregate type an event of type T belongs to. */
type AggregateOf<T extends EventType> = Spec<T> extends { aggregate: infer A } ? A : never;

/** What an event of type T carries, as services write it. */
export type PayloadOf<T extends EventType> =
  Spec<T> extends ReadBack<string, infer P> ? P : Spec<T> extends WriteOnly<string, infer P> ? P : never;

/** An event of type T to append. */
interface NewEventOf<T extends EventType> {
  aggregateType: AggregateOf<T>;
  aggregateId: string;
  eventType: T;
  payload: PayloadOf<T>;
  schemaVersion?: number;
}

/** An event to append, of any type: its type decides its aggregate type and its payload. */
export type NewEvent = { [T in EventType]: NewEventOf<T> }[EventType];

/**
 * A stored event of type T, its payload read (readEvent): parsed for the types read back; as stored,
 * unparsed, for the others, which nothing reads.
 */
export type TypedEvent<T extends EventType> = Omit<LedgerEvent, 'eventType' | 'payload'> & {
  eventType: T;
  payload: Spec<T> extends ReadBack<string, infer P> ? P : Record<string, unknown>;
};
