/**
 * Type-level checks of the registry of event types, run by `npm run typecheck` (tsc over the
 * project; nothing executes this file). Each `@ts-expect-error` must meet an error: should a check
 * stop working (an append taking any type again, a projection map or the pages' words no longer
 * needing every type), the directive is unused and the typecheck fails here.
 */
import type { EventPhrases } from '@/app/_lib/event-words';
import type { NewEvent } from '@/server/ledger/append';
import type { EventType } from '@/server/ledger/event-types';
import type { ProjectionRules } from './events';
import type { RulesOf } from './projection';
import type { grantEvents } from './grants/events';

/** True when A and B are the same type. */
type Same<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;

// The projection rules and the pages' words are keyed by the registry, every type of it.
const _rulesCoverTheRegistry: Same<keyof ProjectionRules, EventType> = true;
const _wordsCoverTheRegistry: Same<keyof EventPhrases, EventType> = true;

// A new event type without its projection rule: the map lacks one type's rule.
declare const rulesWithoutOne: Omit<ProjectionRules, 'decision.expired'>;
// @ts-expect-error -- a projection map must have a rule for every event type
const _rulesMissingOne: ProjectionRules = rulesWithoutOne;

// The same within an aggregate's slice: its rules must cover its types.
declare const grantRulesWithoutOne: Omit<RulesOf<typeof grantEvents>, 'grant.refused'>;
// @ts-expect-error -- a slice's rules must have a rule for each of the slice's types
const _sliceRulesMissingOne: RulesOf<typeof grantEvents> = grantRulesWithoutOne;

// Every slice's types are the registry's (the composition left none out): a type of a slice is an EventType.
const _sliceTypesAreRegistered: Same<keyof typeof grantEvents & EventType, keyof typeof grantEvents> = true;

// A new event type without its words.
declare const wordsWithoutOne: Omit<EventPhrases, 'run.released'>;
// @ts-expect-error -- the pages' words must cover every event type
const _wordsMissingOne: EventPhrases = wordsWithoutOne;

// What appendEvents and appendEventsAtCommit take.
const _welltyped: NewEvent = {
  aggregateType: 'task',
  aggregateId: 't-1',
  eventType: 'task.updated',
  payload: { task_id: 't-1', changes: { title: { before: 'a', after: 'b' } } },
};

const _misspelled: NewEvent = {
  aggregateType: 'task',
  aggregateId: 't-1',
  // @ts-expect-error -- a misspelled event type
  eventType: 'task.udpated',
  payload: { task_id: 't-1', changes: {} },
};

const _wrongPayload: NewEvent = {
  aggregateType: 'task',
  aggregateId: 't-1',
  eventType: 'task.updated',
  // @ts-expect-error -- a payload without the fields its type carries
  payload: { task_id: 't-1' },
};

// @ts-expect-error -- an event type belongs to one aggregate type
const _wrongAggregate: NewEvent = {
  aggregateType: 'run',
  aggregateId: 't-1',
  eventType: 'task.updated',
  payload: { task_id: 't-1', changes: {} },
};
