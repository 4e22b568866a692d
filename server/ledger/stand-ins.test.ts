import { describe, expect, it } from 'vitest';
import { fillText, fillValue, makeStandIns } from './stand-ins';

describe('stand-ins for what ledger_append assigns', () => {
  it('have the shape of what they stand for, and differ every time', () => {
    const seen = new Set<string | number>();
    for (let i = 0; i < 200; i++) {
      const [version, previous, sequence, hash] = makeStandIns();
      for (const n of [version, sequence]) {
        expect(Number.isSafeInteger(n)).toBe(true);
        expect(String(n)).toMatch(/^[1-9][0-9]{15}$/);
      }
      for (const h of [previous, hash]) expect(h).toMatch(/^sha256:[0-9a-f]{64}$/);
      for (const v of [version, previous, sequence, hash]) seen.add(v);
    }
    expect(seen.size).toBe(800);
  });

  it('are swapped for their values in a body’s text and, in place, in the body itself', () => {
    const [version, previous, sequence, hash] = makeStandIns();
    const body = { data: { aggregateVersion: version, eventHash: hash, nested: [{ seq: sequence }], title: 'kept', n: 7 } };
    const text = JSON.stringify(body);
    const standIns = [version, previous, sequence, hash].map(String);
    const values = ['3', `sha256:${'a'.repeat(64)}`, '42', `sha256:${'b'.repeat(64)}`];
    const filled = { data: { aggregateVersion: 3, eventHash: `sha256:${'b'.repeat(64)}`, nested: [{ seq: 42 }], title: 'kept', n: 7 } };
    expect(JSON.parse(fillText(text, standIns, values))).toEqual(filled);
    fillValue(
      body,
      new Map<string | number, string | number>([
        [version, 3],
        [hash, values[3]!],
        [sequence, 42],
      ]),
    );
    expect(body).toEqual(filled);
  });
});
