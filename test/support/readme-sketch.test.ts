import { describe, expect, it } from 'vitest';
import { mismatches, parseSketch } from './readme-sketch';

const check = (sketch: string, output: string, status: number | null = 200) => mismatches(parseSketch(sketch), { status, output });

describe('README sketches', () => {
  it('matches objects partially, and strings with … as a wildcard', () => {
    const out = '{"data":{"taskId":"6dab","eventHash":"sha256:22198a","duplicate":false},"meta":{"apiVersion":"1"}}';
    expect(check('{"data":{"taskId":"…","eventHash":"sha256:…",…},…}', out)).toEqual([]);
    expect(check('{"data":{"duplicate":true}}', out)).toEqual(['$.data.duplicate: expected true, got false']);
    expect(check('{"data":{"receiptId":"…"}}', out)).toEqual(['$.data.receiptId: missing']);
    expect(check('{"data":{"eventHash":"md5:…"}}', out)).toEqual(['$.data.eventHash: expected "md5:…", got "sha256:22198a"']);
  });

  it('checks the status when one is shown', () => {
    expect(check('201 {"ok":true}', '{"ok":true}', 201)).toEqual([]);
    expect(check('201 {"ok":true}', '{"ok":true}', 200)).toEqual(['status: expected 201, got 200']);
  });

  it('holds arrays to their elements, or with … to those elements in order among others', () => {
    const out = '{"h":[{"t":"a"},{"t":"b"},{"t":"c"}]}';
    expect(check('{"h":[…]}', out)).toEqual([]);
    expect(check('{"h":[{"t":"a"},…,{"t":"c"}]}', out)).toEqual([]);
    expect(check('{"h":[{"t":"c"},…,{"t":"a"}]}', out)).toEqual(['$.h: no element like {"t":"a"} (in order)']);
    expect(check('{"h":[{"t":"a"}]}', out)).toEqual(['$.h: expected 1 elements, got 3']);
    expect(check('{"h":[]}', '{"h":[]}')).toEqual([]);
  });

  it('reads the last JSON line of the output', () => {
    expect(check('{"n":2}', 'plain words\n{"n":1}\n{"n":2}\n')).toEqual([]);
    expect(check('{"n":2}', 'no json here')).toEqual(['no JSON document in the output']);
  });

  it('matches text lines in order, … matching anything', () => {
    const sse = 'retry: 1000\n\nid: YzEu\nevent: work.created\ndata: {"sequence":7}\n\nevent: lease_end\ndata: {"nextCursor":"YzEu"}\n';
    expect(check('retry: 1000\nid: …\nevent: work.created\nevent: lease_end\ndata: {"nextCursor":"…"}', sse)).toEqual([]);
    expect(check('event: lease_end\nevent: work.created', sse)).toEqual(['no line like "event: work.created" (in order) in the output']);
  });

  it('refuses a sketch that is neither JSON with ellipses nor text', () => {
    expect(() => parseSketch('{"a": }')).toThrow(/not JSON with ellipses/);
  });
});
