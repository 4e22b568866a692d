import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readStrictJson } from './strict-json';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const limits = { maxDepth: 64, maxNodes: 50_000, refuseProtoKey: true };

describe('readStrictJson', () => {
  it('reads what JSON.parse reads', () => {
    for (const text of [
      '{"a":[1,-2.5e3,true,false,null,"x\\u00e9\\n"],"b":{}}',
      '[]',
      '"s"',
      '0',
      '-0.5E+2',
      ' {"k" : [ ] } ',
      '{"":{"\\"":[{}]}}',
    ]) {
      const r = readStrictJson(text, limits);
      expect(r.ok && r.value, text).toEqual(JSON.parse(text));
    }
  });

  it('agrees with JSON.parse on any JSON text without repeated names (property)', () => {
    fc.assert(
      fc.property(fc.json({ depthSize: 'medium' }), (text) => {
        const r = readStrictJson(text, { maxDepth: 1_000 });
        expect(r.ok).toBe(true);
        if (r.ok) expect(r.value).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses what JSON.parse refuses, as syntax, at the byte where it stops (property)', () => {
    const mutated = fc.tuple(fc.json(), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', ':', '\\', 'x', '0', '-', '.', 'e', '\u0001'));
    fc.assert(
      fc.property(mutated, ([text, at, insert]) => {
        const i = at % (text.length + 1);
        const candidate = text.slice(0, i) + insert + text.slice(i + 1);
        let parsed = true;
        try {
          JSON.parse(candidate);
        } catch {
          parsed = false;
        }
        const r = readStrictJson(candidate, { maxDepth: 1_000 });
        if (parsed) {
          // Valid JSON is read unless it repeats a name, which JSON.parse would not notice, or
          // holds what cannot be stored (a number the mutation pushed past a double's range).
          if (!r.ok) expect(['duplicate_key', 'unstorable']).toContain(r.problem.kind);
        } else {
          expect(r.ok).toBe(false);
          // The first problem is reported: a repeated name or an unstorable value before the broken part is that problem.
          if (!r.ok && r.problem.kind !== 'duplicate_key' && r.problem.kind !== 'unstorable') {
            expect(r.problem.kind).toBe('syntax');
            if (r.problem.kind === 'syntax') expect(r.problem.offset).toBeLessThanOrEqual(Buffer.byteLength(candidate));
          }
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses the texts JSON refuses, with a message that does not quote them', () => {
    for (const text of [
      '',
      ' ',
      '{',
      '[1,]',
      '{"a":1,}',
      '{a:1}',
      "'x'",
      '01',
      '1.',
      '-',
      '1e',
      '[1] 2',
      '"\u0001"',
      '"\\q"',
      'NaN',
      'tru',
      'nulls',
      '\ufeff{}',
      '{"a" 1}',
    ]) {
      const r = readStrictJson(text, limits);
      expect(r.ok, text).toBe(false);
      if (!r.ok) {
        expect(r.problem.kind, text).toBe('syntax');
        if (text.length > 3) expect(r.problem.message).not.toContain(text);
      }
    }
  });

  it('names where a syntax error is, in UTF-8 bytes', () => {
    expect(readStrictJson('{"a":}', limits)).toMatchObject({ ok: false, problem: { kind: 'syntax', offset: 5 } });
    expect(readStrictJson('{"ünï":"x",]', limits)).toMatchObject({ ok: false, problem: { kind: 'syntax', offset: 13 } });
    expect(readStrictJson('"ab\ncd"', limits)).toMatchObject({ ok: false, problem: { kind: 'syntax', offset: 3 } });
  });

  it('refuses what no store keeps, with its JSON pointer: U+0000, lone surrogates (escaped or raw) and numbers beyond a double', () => {
    const refused: [string, string, RegExp][] = [
      ['{"state":{"note":"a\\u0000b"}}', '/state/note', /U\+0000/],
      ['{"state":{"a\\u0000":1}}', '/state/a\u0000', /member name holds U\+0000/],
      ['{"s":["ok","\\ud800"]}', '/s/1', /lone surrogate \(\\ud800\)/],
      ['{"s":"\\ud800x"}', '/s', /lone surrogate \(\\ud800\)/],
      ['{"s":"\\udc00"}', '/s', /lone surrogate \(\\udc00\)/],
      ['{"s":"\\ud800\\ud800\\udc00"}', '/s', /lone surrogate/],
      ['{"s":"x\ud800"}', '/s', /lone surrogate \(\\ud800\)/],
      ['{"s":"\udc00y"}', '/s', /lone surrogate \(\\udc00\)/],
      ['{"n":1e400}', '/n', /1e400 is beyond a 64-bit float/],
      ['{"n":[-1E+309]}', '/n/0', /beyond a 64-bit float/],
      [`{"n":${'9'.repeat(400)}}`, '/n', /9{40}… is beyond/],
    ];
    for (const [text, path, message] of refused) {
      const r = readStrictJson(text, { maxDepth: 64 });
      expect(r.ok, text).toBe(false);
      if (!r.ok) expect(r.problem, text).toMatchObject({ kind: 'unstorable', path, message: expect.stringMatching(message) });
    }
    for (const text of [
      '{"s":"\\ud83d\\ude00"}',
      '{"s":"\ud83d\ude00"}',
      '{"s":"\\u0001 \\u00e9"}',
      '{"n":1e308}',
      '{"n":1e-400}',
      `{"n":${'9'.repeat(300)}}`,
    ]) {
      expect(readStrictJson(text, { maxDepth: 64 }).ok, text).toBe(true);
    }
  });

  it('lets unstorable strings through when asked, and still checks everything after them', () => {
    const kept = readStrictJson('{"a":"x\\u0000y","b":"\\ud800"}', { maxDepth: 64, keepUnstorableText: true });
    expect(kept).toMatchObject({ ok: true, value: { a: 'x\u0000y', b: '\ud800' } });
    const deep = `{"a":"\\u0000","b":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    expect(readStrictJson(deep, { maxDepth: 64, keepUnstorableText: true })).toMatchObject({ ok: false, problem: { kind: 'depth' } });
    expect(readStrictJson('{"n":1e400}', { maxDepth: 64, keepUnstorableText: true })).toMatchObject({
      ok: false,
      problem: { kind: 'unstorable' },
    });
  });

  it('refuses a repeated member name (also spelt with escapes) with its JSON pointer; the same name in other objects is fine', () => {
    expect(readStrictJson('{"a":{"b":1,"b":2}}', limits)).toMatchObject({ ok: false, problem: { kind: 'duplicate_key', path: '/a/b' } });
    expect(readStrictJson('{"title":"a","t\\u0069tle":"b"}', limits)).toMatchObject({
      ok: false,
      problem: { kind: 'duplicate_key', path: '/title' },
    });
    expect(readStrictJson('[{},{"a/b~":1,"a/b~":2}]', limits)).toMatchObject({ ok: false, problem: { path: '/1/a~1b~0' } });
    // Past 16 names the check uses a set: a repeat there is found too.
    const many = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`).join(',');
    expect(readStrictJson(`{${many},"k3":0}`, limits)).toMatchObject({ ok: false, problem: { kind: 'duplicate_key', path: '/k3' } });
    expect(readStrictJson('{"a":{"a":1},"b":{"a":2},"list":[{"a":1},{"a":2}]}', limits).ok).toBe(true);
  });

  it('refuses __proto__ members only when asked, and never pollutes Object.prototype', () => {
    const text = '{"x":[{"__proto__":{"polluted":true}}]}';
    expect(readStrictJson(text, limits)).toMatchObject({ ok: false, problem: { kind: 'forbidden_key', path: '/x/0/__proto__' } });
    const kept = readStrictJson(text, { maxDepth: 64 });
    expect(kept.ok && JSON.stringify(kept.value)).toBe(text);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('allows depth 64 and refuses 65; allows 50000 values and refuses 50001', () => {
    expect(readStrictJson(nested(64), limits)).toMatchObject({ ok: true, depth: 64 });
    expect(readStrictJson(`{"a":${nested(64)}}`, limits)).toMatchObject({
      ok: false,
      problem: { kind: 'depth', path: '/a' + '/0'.repeat(63) },
    });
    // An array of n-1 numbers is n values.
    const array = (n: number) =>
      `[${Array(n - 1)
        .fill(0)
        .join(',')}]`;
    expect(readStrictJson(array(50_000), limits)).toMatchObject({ ok: true, nodes: 50_000 });
    expect(readStrictJson(array(50_001), limits)).toMatchObject({ ok: false, problem: { kind: 'nodes', path: '/49999' } });
  });

  it('does not recurse and stops at the first problem: a million brackets fail on depth', () => {
    expect(readStrictJson(nested(1_000_000), limits)).toMatchObject({ ok: false, problem: { kind: 'depth' } });
    expect(readStrictJson('{"a":'.repeat(1_000_000), limits)).toMatchObject({ ok: false, problem: { kind: 'depth' } });
  });
});
