import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sealedChain } from '@/test/support/chain';
import {
  canonicalJson,
  digestOf,
  eventCanonicalSegments,
  eventCanonicalText,
  ledgerEventCanonicalText,
  eventHashOf,
  joinCanonicalSegments,
  type UnsealedEvent,
} from './canonical';

describe('RFC 8785 canonical JSON', () => {
  it('writes exactly what the canonicalize package writes, for any JSON value', () => {
    // Full unicode strings (lone surrogates included), all number forms, deep nesting, -0, and
    // the non-JSON members JSON leaves out of objects and writes as null in arrays.
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.string({ unit: 'binary' }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('member')),
        fc.dictionary(fc.string({ unit: 'binary' }), tie('member')),
      ),
      member: fc.oneof({ depthSize: 'small' }, tie('node'), fc.constant(undefined)),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(canonicalize(v));
      }),
      { numRuns: 2000 },
    );
    const date = new Date('2026-11-23T10:00:00.123Z');
    expect(canonicalJson({ at: date, list: [date] })).toBe(canonicalize({ at: date, list: [date] }));
    expect(() => canonicalJson(NaN)).toThrow();
    expect(() => canonicalJson({ a: Infinity })).toThrow();
    expect(() => canonicalJson(undefined)).toThrow();
  });

  it('never takes one object’s cached key order for another whose keys join alike', () => {
    // ["a\0b", "c"] and ["a", "b\0c"] join to the same text; the cached order must not be reused.
    expect(canonicalJson({ 'a\u0000b': 1, c: 2 })).toBe('{"a\\u0000b":1,"c":2}');
    expect(canonicalJson({ b: 3, 'a\u0000c': 4 })).toBe(canonicalize({ b: 3, 'a\u0000c': 4 }));
    expect(canonicalJson({ a: 1, 'b\u0000c': 2 })).toBe('{"a":1,"b\\u0000c":2}');
    // The same shape in another order is sorted again, not served the first order.
    expect(canonicalJson({ c: 2, 'a\u0000b': 1 })).toBe('{"a\\u0000b":1,"c":2}');
  });

  it('matches the RFC’s own sample (RFC 8785 §3.2.2): whitespace, number forms, string escapes, key order', () => {
    const input = JSON.parse(
      '{\n  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n' +
        '  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n  "literals": [null, true, false]\n}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const keys = Object.keys(JSON.parse(canonicalJson(input)) as object);
    // JSON.parse puts integer-like keys first; compare the serialised order instead.
    const order = [...canonicalJson(input).matchAll(/"([^"]*)":/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
    expect(order).toEqual(['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33']);
    expect(keys).toHaveLength(7);
  });

  it('serialises numbers as in Appendix B', () => {
    const cases: [string, string][] = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'],
      ['0000000000000001', '5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c3a0000000000000', '-576460752303423500'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
    ];
    for (const [bits, expected] of cases) {
      expect(canonicalJson(Buffer.from(bits, 'hex').readDoubleBE(0)), bits).toBe(expected);
    }
  });

  it('refuses values JSON cannot carry', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow();
    expect(() => canonicalJson(Number.POSITIVE_INFINITY)).toThrow();
    expect(() => canonicalJson(undefined)).toThrow();
  });

  it('digests are sha256: + hex of the canonical bytes', () => {
    expect(digestOf({})).toBe('sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
    const value = { b: 'ü', a: [1, 2.5] };
    const expected = createHash('sha256').update(Buffer.from('{"a":[1,2.5],"b":"ü"}', 'utf8')).digest('hex');
    expect(digestOf(value)).toBe(`sha256:${expected}`);
  });
});

const jsonValue = fc.jsonValue({ maxDepth: 3 }).filter((v) => !Object.is(v, -0));

const unsealedEvent: fc.Arbitrary<UnsealedEvent> = fc.record({
  id: fc.uuid(),
  workspaceId: fc.uuid(),
  ownerId: fc.uuid(),
  aggregateType: fc.constantFrom('task', 'decision', 'workspace'),
  aggregateId: fc.uuid(),
  eventType: fc.constantFrom('work.created', 'decision.approved'),
  schemaVersion: fc.integer({ min: 1, max: 9 }),
  actorType: fc.constantFrom('api_key' as const, 'human' as const, 'system' as const),
  actorId: fc.string(),
  payload: fc.dictionary(fc.string(), jsonValue),
  payloadDigest: fc.constant(`sha256:${'a'.repeat(64)}`),
  occurredAtCanonical: fc.constant('2026-11-20T10:00:00.000Z'),
  idempotencyKey: fc.option(fc.string(), { nil: null }),
  causationId: fc.uuid(),
  correlationId: fc.uuid(),
  contextManifestDigest: fc.constant(`sha256:${'b'.repeat(64)}`),
});

describe('event canonical segments (what the database hashes under the lock)', () => {
  it('joined with version, previous hash and sequence, equal the canonical event without eventHash', () => {
    fc.assert(
      fc.property(
        unsealedEvent,
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }),
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        (event, version, prevHex, sequence) => {
          const previousHash = `sha256:${prevHex}`;
          const joined = joinCanonicalSegments(eventCanonicalSegments(event), version, previousHash, sequence);
          expect(joined).toBe(canonicalJson({ ...event, aggregateVersion: version, previousHash, sequence }));
        },
      ),
    );
  });

  it('the event text built around an already serialised payload is the canonical event without eventHash', () => {
    fc.assert(
      fc.property(unsealedEvent, fc.integer({ min: 1, max: 1_000_000 }), (event, sequence) => {
        const sealed = { ...event, aggregateVersion: 1, previousHash: `sha256:${'c'.repeat(64)}`, sequence, eventHash: 'sha256:x' };
        const { eventHash: _left, ...hashed } = sealed;
        expect(eventCanonicalText(sealed, canonicalJson(event.payload))).toBe(canonicalize(hashed));
        expect(eventCanonicalText(sealed)).toBe(canonicalize(hashed));
        // A field no event has (a tampered bundle) is not dropped by the fixed-field fast path.
        expect(eventCanonicalText({ ...sealed, extra: 1 } as typeof sealed)).toBe(canonicalize({ ...hashed, extra: 1 }));
        // The verifier's template, the keys written out in JCS order: the same text, to the byte.
        expect(ledgerEventCanonicalText(sealed, canonicalJson(event.payload))).toBe(canonicalize(hashed));
      }),
    );
  });

  it('eventHashOf ignores an eventHash already present and covers every other field', () => {
    const { eventHash: _sealed, ...event } = sealedChain(1)[0]!;
    const hash = eventHashOf(event);
    expect(eventHashOf({ ...event, eventHash: 'sha256:whatever' })).toBe(hash);
    expect(eventHashOf({ ...event, sequence: 2 })).not.toBe(hash);
    expect(eventHashOf({ ...event, actorId: 'someone else' })).not.toBe(hash);
  });
});
