import { describe, expect, it } from 'vitest';
import { joinSlices } from './projection';

describe('joinSlices', () => {
  it('joins the aggregates’ slices into one registry, each member as its slice declared it', () => {
    const a = { 'a.created': 1, 'a.removed': 2 };
    const b = { 'b.created': 3 };
    expect(joinSlices(a, b)).toEqual({ 'a.created': 1, 'a.removed': 2, 'b.created': 3 });
  });

  it('refuses an event type that two slices declare, instead of keeping one of them', () => {
    expect(() => joinSlices({ 'a.created': 1 }, { 'b.created': 2 }, { 'a.created': 3 })).toThrow(
      "event type a.created is declared by two aggregates' slices",
    );
  });
});
