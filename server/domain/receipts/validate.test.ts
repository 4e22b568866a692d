import { describe, expect, it } from 'vitest';
import { LIMITS, validateReceiptText } from './validate';
import { sampleReceipt } from './sample';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

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
  it('refuses duplicate and __proto__ members with where they are, and names the byte of a syntax error', () => {
    expect(validateReceiptText('{"a":{"b":1,"b":2}}')).toMatchObject({
      ok: false,
      code: 'input.invalid_json',
      issues: [{ path: '/a/b', code: 'input.duplicate_key' }],
    });
    expect(validateReceiptText('{"x":[{"__proto__":{"polluted":true}}]}')).toMatchObject({
      ok: false,
      code: 'input.invalid_json',
      issues: [{ path: '/x/0/__proto__', code: 'input.forbidden_key' }],
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // "é" is two bytes: the "}" is character 7 and byte 8.
    expect(validateReceiptText('{"é":1,}')).toMatchObject({
      ok: false,
      code: 'input.invalid_json',
      message: expect.stringContaining('byte offset 8'),
    });
  });
});
