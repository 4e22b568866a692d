import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BundleScanner, BundleSyntaxError, type EventsBatch } from './bundle-scan';

const bytes = (text: string) => new TextEncoder().encode(text);

/** Scans `text` fed in chunks of the given sizes (cycled); the members, and the events as the batches hold them. */
function scan(text: string, chunkSizes: number[] = [text.length], batchBytes = 64) {
  const all = bytes(text);
  const scanner = new BundleScanner(batchBytes);
  const batches: EventsBatch[] = [];
  for (let at = 0, k = 0; at < all.length; k++) {
    const size = Math.max(1, chunkSizes[k % chunkSizes.length]!);
    // A fresh copy per chunk, as a file stream gives them.
    batches.push(...scanner.push(all.slice(at, at + size)));
    at += size;
  }
  scanner.end();
  const events: unknown[] = [];
  for (const batch of batches) {
    const parsed = JSON.parse(new TextDecoder().decode(new Uint8Array(batch.json, 0, batch.length))) as unknown[];
    expect(batch.firstIndex).toBe(events.length);
    events.push(...parsed);
  }
  return { members: Object.fromEntries(scanner.members), events, batches: batches.length, shape: scanner.events };
}

const syntaxError = (text: string) => () => scan(text, [3]);

describe('BundleScanner', () => {
  it('parses the members and cuts the events array into batches of whole elements, however the bytes are chunked', () => {
    const bundle = {
      format: 'aws-ledger-bundle/1',
      from: { sequence: 0, hash: 'x' },
      events: Array.from({ length: 30 }, (_, i) => ({
        n: i,
        text: `"quoted" \\ back, [bracket] {brace} ${'é'.repeat(i)}`,
        nested: [[i], { a: [] }],
      })),
      head: { sequence: 30, headHash: 'y' },
      previous: null,
    };
    for (const text of [JSON.stringify(bundle), JSON.stringify(bundle, null, 2)]) {
      for (const sizes of [[text.length], [1], [7, 2, 13], [64]]) {
        const found = scan(text, sizes);
        expect(found.events).toEqual(bundle.events);
        expect(found.members).toEqual({ format: bundle.format, from: bundle.from, head: bundle.head, previous: null });
        expect(found.batches).toBeGreaterThan(5);
        expect(found.shape).toBe('array');
      }
    }
  });

  it('holds for any JSON values in any member order, chunking and batch size (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { maxLength: 12 }),
        fc.dictionary(
          fc.string().filter((k) => k !== 'events'),
          fc.jsonValue(),
          { maxKeys: 4 },
        ),
        fc.nat({ max: 5 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 200 }),
        fc.boolean(),
        (events, others, position, sizes, batchBytes, pretty) => {
          const entries = Object.entries(others);
          entries.splice(Math.min(position, entries.length), 0, ['events', events]);
          // JSON.parse reads "__proto__" as an own member; Object.fromEntries keeps it as one too.
          const text = `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v, null, pretty ? 2 : undefined)}`).join(pretty ? ',\n ' : ',')}}`;
          const found = scan(text, sizes, batchBytes);
          expect(found.events).toEqual(JSON.parse(JSON.stringify(events)));
          expect(found.members).toEqual(JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(others)))));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses what is not the JSON text of one object, and commas out of place in the events array', () => {
    for (const text of [
      '[]',
      '{"a":1',
      '{"a":1}}',
      '{"a":1} x',
      '{"a" 1}',
      '{a:1}',
      '{"a":1,}',
      '{"a":1,"a":2}',
      '{"events":[],"events":[]}',
      '{"events":[1,,2]}',
      '{"events":[,1]}',
      '{"events":[1,2,]}',
      '{"events":[1}',
      '{"a":tru}',
    ]) {
      expect(syntaxError(text), text).toThrow(BundleSyntaxError);
    }
  });

  it('says when events is not an array, and when it is absent', () => {
    expect(scan('{"events":{"a":1}}').shape).toBe('not_an_array');
    expect(scan('{"events":"x","b":1}')).toMatchObject({ shape: 'not_an_array', members: { b: 1 } });
    expect(scan('{"b":1}')).toMatchObject({ shape: 'absent', events: [] });
    expect(scan('{"events":[]}')).toMatchObject({ shape: 'array', events: [], batches: 0 });
    expect(scan(' { "events" : [ ] } \n')).toMatchObject({ shape: 'array', events: [] });
  });

  it('a member name written with escapes is the name it spells', () => {
    expect(scan('{"ev\\u0065nts":[1,2],"x\\"y":3}')).toMatchObject({ events: [1, 2], members: { 'x"y': 3 } });
  });
});
