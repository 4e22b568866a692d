import { describe, expect, it } from 'vitest';
import { plural } from './words';

describe('plural', () => {
  it('says one thing in the singular and every other count in the plural', () => {
    expect(plural(1, 'event')).toBe('1 event');
    expect(plural(0, 'event')).toBe('0 events');
    expect(plural(2, 'API key')).toBe('2 API keys');
    expect(plural(1, 'dedup claim')).toBe('1 dedup claim');
  });

  it('takes the plural of a noun that does not add an s', () => {
    expect(plural(1, 'person', 'people')).toBe('1 person');
    expect(plural(3, 'person', 'people')).toBe('3 people');
  });
});
