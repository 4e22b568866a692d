import { describe, expect, it } from 'vitest';
import { sealedChain } from '@/test/support/chain';
import type { LedgerEvent } from './canonical';
import { ChainVerifier } from './chain';
import { eventLeafHash, rootOfLeaves, TreeAccumulator } from './merkle';
import { ChainJoin, verifyBatch } from './verify-batch';

/** What one ChainVerifier reports over the whole chain. */
function whole(events: LedgerEvent[], head?: { sequence: number; headHash: string }) {
  const verifier = new ChainVerifier();
  for (const event of events) if (!verifier.push(event)) break;
  return verifier.finish(head);
}

/** The same chain cut into batches of `size`, each verified alone, joined in order. */
function batched(events: LedgerEvent[], size: number, head?: { sequence: number; headHash: string }) {
  const join = new ChainJoin();
  for (let i = 0; i < events.length; i += size) if (!join.push(verifyBatch(events.slice(i, i + size)))) break;
  return join.finish(head);
}

const N = 24;
const tampering: Record<string, (events: LedgerEvent[], at: number) => void> = {
  payload: (events, at) => (events[at]!.payload = { changed: at }),
  'event hash': (events, at) => (events[at]!.eventHash = `sha256:${'e'.repeat(64)}`),
  'previous hash': (events, at) => (events[at]!.previousHash = `sha256:${'p'.repeat(64)}`),
  'payload and previous hash': (events, at) => {
    events[at]!.payload = { changed: at };
    events[at]!.previousHash = `sha256:${'p'.repeat(64)}`;
  },
  'previous and event hash': (events, at) => {
    events[at]!.previousHash = `sha256:${'p'.repeat(64)}`;
    events[at]!.eventHash = `sha256:${'e'.repeat(64)}`;
  },
  'a missing event': (events, at) => void events.splice(at, 1),
  'a repeated sequence': (events, at) => (events[at]!.sequence = at),
  'an event moved': (events, at) => {
    const [moved] = events.splice(at, 1);
    events.splice(at + 2 <= events.length ? at + 2 : at - 2, 0, moved!);
  },
};

describe('verifying in batches joined in order (ledger:verify on every core)', () => {
  const chain = sealedChain(N);
  const copy = () => chain.map((e) => ({ ...e, payload: { ...e.payload } }));
  // First, second and last events, and around every boundary of batches of 3 and 4.
  const places = [0, 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, N - 2, N - 1];

  it('gives the report of one verifier over the whole chain, intact, and against its head', () => {
    const last = chain[N - 1]!;
    for (const size of [1, 2, 3, 4, 7, N, N + 5]) {
      expect(batched(copy(), size)).toEqual(whole(copy()));
      expect(batched(copy(), size, { sequence: N, headHash: last.eventHash })).toEqual(
        whole(copy(), { sequence: N, headHash: last.eventHash }),
      );
      for (const head of [
        { sequence: N + 1, headHash: last.eventHash },
        { sequence: N, headHash: chain[0]!.eventHash },
      ]) {
        const report = batched(copy(), size, head);
        expect(report.firstBreak?.reason).toBe('head_mismatch');
        expect(report).toEqual(whole(copy(), head));
      }
    }
  });

  for (const [what, tamper] of Object.entries(tampering)) {
    it(`finds the first break where one verifier does: ${what}`, () => {
      for (const at of places) {
        const events = copy();
        tamper(events, at);
        const expected = whole(events, { sequence: N, headHash: chain[N - 1]!.eventHash });
        expect(expected.verified).toBe(false);
        for (const size of [1, 2, 3, 4, 7, N]) {
          expect({ at, size, report: batched(events, size, { sequence: N, headHash: chain[N - 1]!.eventHash }) }).toEqual({
            at,
            size,
            report: expected,
          });
        }
      }
    });
  }

  it('takes nothing after a break', () => {
    const events = copy();
    events[5]!.payload = { changed: true };
    const join = new ChainJoin();
    expect(join.push(verifyBatch(events.slice(0, 4)))).toBe(true);
    expect(join.push(verifyBatch(events.slice(4, 8)))).toBe(false);
    expect(join.push(verifyBatch(events.slice(8, 12)))).toBe(false);
    expect(join.finish()).toMatchObject({ verified: false, checkedEvents: 5, lastVerified: { sequence: 5 }, firstBreak: { sequence: 6 } });
  });

  it('gives the Merkle root of the first tree-size events, however the batches cut the chain', () => {
    for (const treeSize of [1, 5, 16, 17, N]) {
      const expected = rootOfLeaves(chain.slice(0, treeSize).map((e) => eventLeafHash(e.eventHash)));
      for (const size of [1, 3, 4, 7, N]) {
        const tree = new TreeAccumulator();
        const join = new ChainJoin(undefined, tree);
        for (let i = 0; i < N; i += size) join.push(verifyBatch(copy().slice(i, i + size), treeSize));
        expect({ treeSize, size, leaves: tree.size, root: tree.root().toString('hex') }).toEqual({
          treeSize,
          size,
          leaves: treeSize,
          root: expected.toString('hex'),
        });
      }
    }
  });
});
