import { describe, expect, it } from 'vitest';
import { actorLabel, eventWords } from './event-words';

describe('eventWords', () => {
  it('says what happened, with what it happened to when the page lists many things', () => {
    expect(eventWords({ eventType: 'decision.created' })).toBe('Raised');
    expect(eventWords({ eventType: 'decision.created' }, { subject: true })).toBe('Decision raised');
    expect(eventWords({ eventType: 'task.status_changed', payload: { status: 'in_progress' } })).toBe('Moved to in progress');
    expect(eventWords({ eventType: 'api_key.revoked' }, { subject: true })).toBe('API key revoked');
    expect(eventWords({ eventType: 'milestone.reopened' }, { subject: true })).toBe('Milestone reopened');
  });

  it('reads an event type it does not know as words, not as code', () => {
    expect(eventWords({ eventType: 'grant.consumed_once' }, { subject: true })).toBe('Grant consumed once');
    expect(eventWords({ eventType: 'grant.consumed_once' })).toBe('Consumed once');
  });
});

describe('actorLabel', () => {
  it('names a person by name, an agent by its key, and the system', () => {
    expect(actorLabel('human', 'Olive Owner')).toBe('Olive Owner');
    expect(actorLabel('api_key', 'ci')).toBe('an agent (key “ci”)');
    expect(actorLabel('api_key', null)).toBe('an agent (a key since deleted)');
    expect(actorLabel('system', null)).toBe('the system');
  });
});
