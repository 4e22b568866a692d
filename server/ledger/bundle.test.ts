import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH } from '@/db/schema';
import { bundleOf, sealedChain } from '@/test/support/chain';
import { verifyBundle } from './bundle';
import { digestOf, eventHashOf, type LedgerEvent } from './canonical';

/** The events sealed again from the first one: digests, links and hashes recomputed, as a forger would. */
function reseal(events: LedgerEvent[]): LedgerEvent[] {
  let previousHash = GENESIS_HASH;
  return events.map((e) => {
    const unsealed = { ...e, payloadDigest: digestOf(e.payload), previousHash };
    const sealed = { ...unsealed, eventHash: eventHashOf(unsealed) };
    previousHash = sealed.eventHash;
    return sealed;
  });
}

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

// Every field of an event, and a different value of the same JSON type for it.
const FIELDS = [
  'id',
  'workspaceId',
  'sequence',
  'ownerId',
  'aggregateType',
  'aggregateId',
  'aggregateVersion',
  'eventType',
  'schemaVersion',
  'actorType',
  'actorId',
  'payload',
  'payloadDigest',
  'occurredAtCanonical',
  'idempotencyKey',
  'causationId',
  'correlationId',
  'contextManifestDigest',
  'previousHash',
  'eventHash',
] as const satisfies readonly (keyof LedgerEvent)[];

function changed(value: unknown, salt: number): unknown {
  if (typeof value === 'number') return value + 1 + salt;
  if (typeof value === 'string') return `${value}${salt % 2 ? 'x' : 'y'}`;
  if (value === null) return `key-${salt}`;
  return { ...(value as object), tampered: salt };
}

describe('ledger bundles', () => {
  it('an export as written verifies, with its head', () => {
    const events = sealedChain(6);
    const report = verifyBundle(clone(bundleOf(events)));
    const end = { sequence: 6, hash: events[5]!.eventHash };
    expect(report).toMatchObject({
      verified: true,
      checkedEvents: 6,
      lastVerified: end,
      head: end,
      firstBreak: null,
      extendsPrevious: null,
      continuesUncheckedExport: false,
    });
  });

  it('any single change, reorder or deletion is reported where the intact chain ends, before the first bad event', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 12 }),
        fc.nat(),
        fc.nat(),
        fc.constantFrom('change', 'swap', 'delete'),
        fc.constantFrom(...FIELDS),
        (n, i, j, how, field) => {
          const events = sealedChain(n);
          const bundle = clone(bundleOf(events));
          const at = i % n;
          let firstBad = at + 1;
          if (how === 'change') {
            const event = bundle.events[at] as unknown as Record<string, unknown>;
            event[field] = changed(event[field], j);
          } else if (how === 'swap') {
            const other = (at + 1 + (j % (n - 1))) % n;
            [bundle.events[at], bundle.events[other]] = [bundle.events[other]!, bundle.events[at]!];
            firstBad = Math.min(at, other) + 1;
          } else {
            bundle.events.splice(at, 1);
          }
          const report = verifyBundle(bundle);
          expect(report.verified).toBe(false);
          // A deleted or changed last event shows as a head that does not match the chain.
          expect(report.lastVerified.sequence).toBe(firstBad - 1);
          expect(report.firstBreak).not.toBeNull();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a changed head, or a head cut short, is refused', () => {
    const bundle = bundleOf(sealedChain(4));
    expect(verifyBundle({ ...bundle, head: { ...bundle.head, sequence: 3 } }).firstBreak?.reason).toBe('head_mismatch');
    expect(verifyBundle({ ...bundle, head: { ...bundle.head, headHash: GENESIS_HASH } }).firstBreak?.reason).toBe('head_mismatch');
  });

  it('a later export extends an earlier one only if the earlier head lies on its chain', () => {
    const events = sealedChain(8);
    const earlier = bundleOf(events.slice(0, 5));
    // Incremental (from the earlier head on) and whole exports both extend it.
    const incremental = bundleOf(events, 5, earlier.head);
    expect(verifyBundle(incremental, earlier)).toMatchObject({ verified: true, extendsPrevious: true, continuesUncheckedExport: false });
    expect(verifyBundle(bundleOf(events, 0, earlier.head), earlier)).toMatchObject({ verified: true, extendsPrevious: true });
    // Without the earlier bundle, the recorded previous head is still checked against the chain,
    // but nothing showed that it extends an export: it continues one that was not checked.
    expect(verifyBundle(incremental)).toMatchObject({ verified: true, extendsPrevious: null, continuesUncheckedExport: true });
    expect(verifyBundle(bundleOf(events, 0, earlier.head))).toMatchObject({
      verified: true,
      extendsPrevious: null,
      continuesUncheckedExport: true,
    });
    expect(verifyBundle(bundleOf(events, 0, { sequence: 7, headHash: events[5]!.eventHash }))).toMatchObject({
      verified: false,
      extendsPrevious: false,
      firstBreak: { reason: 'does_not_extend', sequence: 7 },
    });

    // History rewritten before the earlier head and sealed again: the later chain verifies on its
    // own, but the earlier head is not on it.
    const rewritten = reseal(events.map((e) => (e.sequence === 3 ? { ...e, payload: { n: 3, text: 'rewritten' } } : e)));
    const later = bundleOf(rewritten, 0, earlier.head);
    expect(verifyBundle({ ...later, previous: null }).verified).toBe(true);
    expect(verifyBundle(later, earlier)).toMatchObject({
      verified: false,
      extendsPrevious: false,
      firstBreak: { reason: 'does_not_extend', sequence: 5 },
    });
    expect(verifyBundle({ ...later, previous: null }, earlier)).toMatchObject({ verified: false, extendsPrevious: false });
    // Another workspace's bundle is not a continuation.
    expect(verifyBundle(bundleOf(sealedChain(8)), earlier).firstBreak?.reason).toBe('other_workspace');
    // A bundle starting after the earlier head cannot show it extends it.
    expect(verifyBundle(bundleOf(events, 6, earlier.head), earlier).firstBreak).toMatchObject({ reason: 'does_not_extend', sequence: 5 });
    // A recorded previous head that is not the earlier bundle's head.
    expect(verifyBundle(bundleOf(events, 0, { sequence: 4, headHash: events[3]!.eventHash }), earlier).firstBreak).toMatchObject({
      reason: 'does_not_extend',
    });
  });

  it('a payload with a "__proto__" key is hashed as it was exported', () => {
    const [event] = sealedChain(1);
    const payload = JSON.parse('{"__proto__": {"x": 1}, "a": 2}') as Record<string, unknown>;
    const unsealed = { ...event!, payload, payloadDigest: digestOf(payload) };
    const bundle = bundleOf([{ ...unsealed, eventHash: eventHashOf(unsealed) }]);
    expect(verifyBundle(JSON.parse(JSON.stringify(bundle)))).toMatchObject({ verified: true, checkedEvents: 1 });
  });

  it('anything that is not a bundle is reported, not thrown', () => {
    for (const input of [null, 42, {}, { format: 'other' }, { ...bundleOf(sealedChain(2)), extra: 1 }]) {
      expect(verifyBundle(input).firstBreak?.reason).toBe('not_a_bundle');
    }
  });
});
