import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleOf, sealedChain } from '@/test/support/chain';
import { bundleText, verifyBundle, type LedgerBundle } from './bundle';
import { BundleSyntaxError, readBundleFrame, verifyBundleFile } from './bundle-file';

const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-bundle-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The text ledger:export writes for `bundle` (its members first, then the events a line each, in pages of 3). */
async function exported(bundle: LedgerBundle): Promise<string> {
  const pages: string[][] = [];
  for (let i = 0; i < bundle.events.length; i += 3) pages.push(bundle.events.slice(i, i + 3).map((e) => JSON.stringify(e)));
  let text = '';
  for await (const piece of bundleText(bundle, pages)) text += piece;
  return text;
}

/** Writes `text` to a new file; its path. */
function file(text: string): string {
  const name = path.join(dir, `b${++files}.json`);
  writeFileSync(name, text);
  return name;
}

// Small batches, so that even a short bundle is cut into several, joined across workers.
const small = { batchBytes: 600, workers: 2 };

// Worker threads over dozens of files: seconds on a busy two-core machine, not the unit default of 5.
describe('verifyBundleFile: a bundle file checked as it streams, on worker threads', { timeout: 30_000 }, () => {
  it('reports what verifyBundle reports, for the layout ledger:export writes and for the one it wrote before', async () => {
    const events = sealedChain(9);
    const bundle = bundleOf(events);
    const text = await exported(bundle);
    expect(JSON.parse(text)).toEqual(bundle);
    const expected = verifyBundle(bundle);
    expect(expected).toMatchObject({ verified: true, checkedEvents: 9 });
    expect(await verifyBundleFile(file(text), small)).toEqual(expected);
    // The earlier layout: pretty-printed, `head` and `previous` after the events.
    expect(await verifyBundleFile(file(JSON.stringify(bundle, null, 2)), small)).toEqual(expected);
    // With one worker, and in one batch.
    expect(await verifyBundleFile(file(text), { workers: 1 })).toEqual(expected);
  });

  it('any single change, reorder or deletion is reported exactly as verifyBundle reports it (property)', async () => {
    const FIELDS = [
      'sequence',
      'payload',
      'payloadDigest',
      'previousHash',
      'eventHash',
      'workspaceId',
      'actorId',
      'idempotencyKey',
    ] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 10 }),
        fc.nat(),
        fc.nat(),
        fc.constantFrom('change', 'swap', 'delete', 'break-shape'),
        fc.constantFrom(...FIELDS),
        async (n, i, j, how, field) => {
          const bundle = JSON.parse(JSON.stringify(bundleOf(sealedChain(n)))) as LedgerBundle;
          const at = i % n;
          const event = bundle.events[at] as unknown as Record<string, unknown>;
          if (how === 'change') {
            const value = event[field];
            event[field] =
              typeof value === 'number' ? value + 1 + j : typeof value === 'string' ? `${value}x` : value === null ? 'k' : { t: j };
          } else if (how === 'swap') {
            const other = (at + 1 + (j % (n - 1))) % n;
            [bundle.events[at], bundle.events[other]] = [bundle.events[other]!, bundle.events[at]!];
          } else if (how === 'delete') {
            bundle.events.splice(at, 1);
          } else {
            event[field] = field === 'payload' ? [j] : true;
          }
          const expected = verifyBundle(bundle);
          expect(expected.verified).toBe(false);
          expect(await verifyBundleFile(file(await exported(bundle)), small)).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a later export extends an earlier one: with --previous, and by its own previous head, in either layout', async () => {
    const events = sealedChain(12);
    const earlier = bundleOf(events.slice(0, 5));
    const earlierFile = file(await exported(earlier));
    const cases: [LedgerBundle, LedgerBundle | undefined][] = [
      [bundleOf(events, 5, earlier.head), earlier],
      [bundleOf(events, 0, earlier.head), earlier],
      [bundleOf(events, 5, earlier.head), undefined],
      [bundleOf(events, 0, earlier.head), undefined],
      [bundleOf(events, 0, { sequence: 4, headHash: events[3]!.eventHash }), earlier],
      [bundleOf(events, 6, earlier.head), earlier],
      [bundleOf(sealedChain(8)), earlier],
      [bundleOf(events, 0, { sequence: 7, headHash: events[5]!.eventHash }), undefined],
    ];
    for (const [later, before] of cases) {
      const expected = verifyBundle(later, before);
      const previous = before ? earlierFile : undefined;
      expect(await verifyBundleFile(file(await exported(later)), { ...small, previous })).toEqual(expected);
      // `previous` after the events: its hash is found in a second pass.
      expect(await verifyBundleFile(file(JSON.stringify(later)), { ...small, previous })).toEqual(expected);
    }
    expect(verifyBundle(bundleOf(events, 0, earlier.head), earlier).extendsPrevious).toBe(true);
  });

  it('a file that is not a bundle is reported as not_a_bundle, in verifyBundle’s words; one that is not JSON is thrown', async () => {
    const bundle = bundleOf(sealedChain(3));
    const { events: _events, ...frame } = bundle;
    for (const value of [{}, { format: 'other' }, { ...bundle, extra: 1 }, frame, { ...bundle, events: {} }, { ...bundle, head: null }]) {
      const expected = verifyBundle(value);
      expect(expected.firstBreak?.reason).toBe('not_a_bundle');
      expect(await verifyBundleFile(file(JSON.stringify(value)), small)).toEqual(expected);
    }
    for (const text of [
      '',
      '[]',
      '{"format":',
      JSON.stringify(bundle).replace('"events":[{', '"events":[{,'),
      JSON.stringify(bundle) + 'x',
    ]) {
      await expect(verifyBundleFile(file(text), small)).rejects.toThrow(BundleSyntaxError);
    }
    await expect(verifyBundleFile(path.join(dir, 'missing.json'))).rejects.toThrow(/ENOENT/);
  });

  it('readBundleFrame reads the members without the events', async () => {
    const bundle = bundleOf(sealedChain(4));
    const { events: _events, ...frame } = bundle;
    expect(await readBundleFrame(file(await exported(bundle)))).toEqual({ frame: { ...frame, events: [] }, problem: null });
    expect((await readBundleFrame(file(JSON.stringify({ ...frame, head: 1 })))).problem).toMatch(/^head/);
  });
});
