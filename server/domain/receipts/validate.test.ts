import { describe, expect, it } from 'vitest';
import { parseStrictJson } from './strict-json';
import { LIMITS, validateReceiptText } from './validate';
import { sampleReceipt } from './sample';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('parseStrictJson', () => {
  const limits = { maxDepth: 64, maxNodes: 50_000 };
  it('reads what JSON.parse reads', () => {
    for (const text of ['{"a":[1,-2.5e3,true,false,null,"x\\u00e9\\n"],"b":{}}', '[]', '"s"', '0', ' {"k" : [ ] } ']) {
      const r = parseStrictJson(text, limits);
      expect(r.ok && r.value).toEqual(JSON.parse(text));
    }
  });
  it('refuses what JSON refuses', () => {
    for (const text of ['', '{', '[1,]', '{"a":1,}', '{a:1}', "'x'", '01', '[1] 2', '"\u0001"', 'NaN']) {
      const r = parseStrictJson(text, limits);
      expect(r.ok, text).toBe(false);
      if (!r.ok) expect(r.error.kind, text).toBe('syntax');
    }
  });
  it('refuses duplicate keys and __proto__, naming where', () => {
    const dup = parseStrictJson('{"a":{"b":1,"b":2}}', limits);
    expect(dup).toMatchObject({ ok: false, error: { kind: 'duplicate_key', path: '/a/b' } });
    const proto = parseStrictJson('{"x":[{"__proto__":{"polluted":true}}]}', limits);
    expect(proto).toMatchObject({ ok: false, error: { kind: 'forbidden_key', path: '/x/0/__proto__' } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
  it('allows depth 64 and refuses 65; allows 50000 nodes and refuses 50001', () => {
    expect(parseStrictJson(nested(64), limits).ok).toBe(true);
    expect(parseStrictJson(nested(65), limits)).toMatchObject({ ok: false, error: { kind: 'depth' } });
    // An array of n-1 numbers is n nodes.
    const array = (n: number) =>
      `[${Array(n - 1)
        .fill(0)
        .join(',')}]`;
    expect(parseStrictJson(array(50_000), limits)).toMatchObject({ ok: true, nodes: 50_000 });
    expect(parseStrictJson(array(50_001), limits)).toMatchObject({ ok: false, error: { kind: 'nodes' } });
  });
  it('does not recurse: a million brackets fail on depth, not on the stack', () => {
    expect(parseStrictJson(nested(1_000_000), limits)).toMatchObject({ ok: false, error: { kind: 'depth' } });
  });
});

describe('validateReceiptText', () => {
  it('accepts a valid receipt', () => {
    expect(validateReceiptText(JSON.stringify(sampleReceipt()))).toEqual({ ok: true, valid: true, issues: [] });
  });
  it('reports schema issues as JSON pointers', () => {
    const r = sampleReceipt();
    delete r.summary;
    (r.task as Record<string, unknown>).status = 'exploded';
    r.extra = 1;
    const out = validateReceiptText(JSON.stringify(r));
    expect(out.ok && out.valid).toBe(false);
    const paths = out.issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['/summary', '/task/status', '/extra']));
  });
  it('reports at most 100 of 1000 schema errors', () => {
    const r = sampleReceipt();
    r.evidence = Array.from({ length: 1000 }, () => ({ kind: 'file', digest: 'nope' }));
    const out = validateReceiptText(JSON.stringify(r));
    expect(out.issues).toHaveLength(LIMITS.max_issues);
  });
  it('applies the traversal limits before the schema: too deep is a structure_limit, not schema issues', () => {
    const r = sampleReceipt();
    const deep = JSON.stringify(r).replace('"rulings":[]', `"rulings":${nested(70)}`);
    const out = validateReceiptText(deep);
    expect(out).toMatchObject({ ok: false, code: 'input.structure_limit' });
  });
});
