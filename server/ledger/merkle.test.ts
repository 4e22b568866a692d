/**
 * The Merkle tree against RFC 9162 as written: Certificate Transparency's published test vectors,
 * and the RFC's recursive definitions (MTH, PATH, PROOF) written here a second time, naively, for
 * every size up to 70 and random larger ones.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  consistencyPlan,
  EMPTY_ROOT,
  eventLeafHash,
  hashesOf,
  inclusionPlan,
  interiorHash,
  leafHash,
  nodeKey,
  rangeNodes,
  rootOfLeaves,
  TreeAccumulator,
  rootPlan,
  verifyConsistency,
  verifyInclusion,
  type Plan,
} from './merkle';

// The leaves and roots of certificate-transparency's merkle tree tests (RFC 6962 = RFC 9162 here).
const CT_LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'];
const CT_ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const ctLeaves = CT_LEAVES.map((hex) => leafHash(Buffer.from(hex, 'hex')));
const hex = (b: Buffer) => b.toString('hex');

/** Leaves 0..n-1 with distinct hashes. */
function leavesOf(n: number): Buffer[] {
  return Array.from({ length: n }, (_, i) => leafHash(Buffer.from(`leaf ${i}`)));
}

// RFC 9162 §2.1.1, 2.1.3.1 and 2.1.4.1, as written.
const k = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);
function mth(d: Buffer[]): Buffer {
  if (d.length === 0) return createHash('sha256').digest();
  if (d.length === 1) return d[0]!;
  return interiorHash(mth(d.slice(0, k(d.length))), mth(d.slice(k(d.length))));
}
function path(m: number, d: Buffer[]): Buffer[] {
  if (d.length <= 1) return [];
  const s = k(d.length);
  return m < s ? [...path(m, d.slice(0, s)), mth(d.slice(s))] : [...path(m - s, d.slice(s)), mth(d.slice(0, s))];
}
function subproof(m: number, d: Buffer[], b: boolean): Buffer[] {
  if (m === d.length) return b ? [] : [mth(d)];
  const s = k(d.length);
  return m <= s ? [...subproof(m, d.slice(0, s), b), mth(d.slice(s))] : [...subproof(m - s, d.slice(s), false), mth(d.slice(0, s))];
}

/** Every node of the tree over `leaves`, as the tile store would hand them over. */
function allNodes(leaves: Buffer[]): Map<string, Buffer> {
  const nodes = new Map<string, Buffer>();
  let level = leaves;
  for (let l = 0; level.length > 0; l++) {
    level.forEach((h, index) => nodes.set(nodeKey({ level: l, index }), h));
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(interiorHash(level[i]!, level[i + 1]!));
    level = next;
  }
  return nodes;
}

/** A plan's hashes, having checked it asks only for nodes that exist in a tree of `size`. */
function planned(plan: Plan, nodes: Map<string, Buffer>, size: number): Buffer[] {
  for (const node of plan.nodes) expect((node.index + 1) * 2 ** node.level).toBeLessThanOrEqual(size);
  return hashesOf(plan, nodes);
}

describe('the Merkle tree (RFC 9162)', () => {
  it('gives certificate-transparency’s roots for its eight test leaves', () => {
    for (let n = 1; n <= 8; n++) {
      expect(hex(rootOfLeaves(ctLeaves.slice(0, n)))).toBe(CT_ROOTS[n - 1]);
      expect(hex(planned(rootPlan(n), allNodes(ctLeaves.slice(0, n)), n)[0]!)).toBe(CT_ROOTS[n - 1]);
    }
    expect(hex(rootOfLeaves([]))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(rootPlan(0).ranges).toEqual([]);
    expect(EMPTY_ROOT.equals(rootOfLeaves([]))).toBe(true);
  });

  it('verifies certificate-transparency’s consistency proof from 2 to 5', () => {
    const proof = [
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ].map((h) => Buffer.from(h, 'hex'));
    const [from, to] = [Buffer.from(CT_ROOTS[1]!, 'hex'), Buffer.from(CT_ROOTS[4]!, 'hex')];
    expect(verifyConsistency(2, 5, proof, from, to)).toBe(true);
    expect(hashesOf(consistencyPlan(2, 5), allNodes(ctLeaves.slice(0, 5))).map(hex)).toEqual(proof.map(hex));
    expect(verifyConsistency(2, 5, proof, to, from)).toBe(false);
  });

  it('hashes an event’s leaf from the 32 bytes of its eventHash', () => {
    const h = `sha256:${'ab'.repeat(32)}`;
    expect(
      eventLeafHash(h).equals(
        createHash('sha256')
          .update(Buffer.from([0]))
          .update(Buffer.alloc(32, 0xab))
          .digest(),
      ),
    ).toBe(true);
    expect(() => eventLeafHash('sha256:xyz')).toThrow();
  });

  it('computes roots, audit paths and consistency proofs as the RFC defines them, for every size up to 70', () => {
    const leaves = leavesOf(70);
    const nodes = allNodes(leaves);
    for (let n = 1; n <= 70; n++) {
      const d = leaves.slice(0, n);
      const root = mth(d);
      expect(rootOfLeaves(d).equals(root)).toBe(true);
      expect(planned(rootPlan(n), nodes, n)[0]!.equals(root)).toBe(true);
      for (let m = 0; m < n; m++) {
        const proof = planned(inclusionPlan(m, n), nodes, n);
        expect(proof.map(hex)).toEqual(path(m, d).map(hex));
        expect(verifyInclusion(m, n, d[m]!, proof, root)).toBe(true);
      }
      for (let m = 1; m <= n; m++) {
        const proof = planned(consistencyPlan(m, n), nodes, n);
        expect(proof.map(hex)).toEqual(subproof(m, d, true).map(hex));
        expect(verifyConsistency(m, n, proof, mth(d.slice(0, m)), root)).toBe(true);
      }
    }
  });

  it('accumulates the root of a growing tree leaf by leaf, and from any cut into aligned nodes', () => {
    const leaves = leavesOf(70);
    const acc = new TreeAccumulator();
    expect(acc.root().equals(EMPTY_ROOT)).toBe(true);
    for (let n = 1; n <= 70; n++) {
      acc.appendLeaf(leaves[n - 1]!);
      expect(acc.size).toBe(n);
      expect(hex(acc.root())).toBe(hex(mth(leaves.slice(0, n))));
    }
    // Batches cut anywhere (a verifier's worker threads): their nodes, appended in order, give the same roots.
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 70 }), { minLength: 1, maxLength: 6 }), (cuts) => {
        const ends = [...new Set(cuts)].sort((a, b) => a - b);
        const joined = new TreeAccumulator();
        let start = 0;
        for (const end of ends) {
          const nodes = rangeNodes(start, leaves.slice(start, end));
          // Each node is the largest aligned one that fits: never more than two per level.
          expect(nodes.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(end - start + 1)) + 1);
          for (const node of nodes) joined.append(node.level, node.hash);
          start = end;
          expect(hex(joined.root())).toBe(hex(mth(leaves.slice(0, end))));
        }
      }),
    );
    // Resumed from its size and subtrees' hashes (a verification in steps), it goes on alike.
    for (const cut of [1, 6, 13, 64, 69]) {
      const before = new TreeAccumulator();
      for (const leaf of leaves.slice(0, cut)) before.appendLeaf(leaf);
      const resumed = TreeAccumulator.resume(cut, before.hashes);
      for (const leaf of leaves.slice(cut)) resumed.appendLeaf(leaf);
      expect(hex(resumed.root())).toBe(hex(mth(leaves)));
    }
    expect(() => TreeAccumulator.resume(3, [leaves[0]!])).toThrow(/has 2 subtrees, not 1/);
    // A run that starts later (a bundle after its `from`), leaf by leaf or node by node, joined to
    // the subtrees before it.
    for (const from of [0, 1, 5, 8, 13, 33]) {
      for (const to of [from, from + 1, from + 7, 70]) {
        const run = new TreeAccumulator(from);
        for (const node of rangeNodes(from, leaves.slice(from, Math.min(to, from + 3)))) run.append(node.level, node.hash);
        for (const leaf of leaves.slice(Math.min(to, from + 3), to)) run.appendLeaf(leaf);
        const before = new TreeAccumulator();
        for (const leaf of leaves.slice(0, from)) before.appendLeaf(leaf);
        const whole = TreeAccumulator.resume(from, before.hashes);
        whole.extend(run);
        expect({ from, to, root: hex(whole.root()) }).toEqual({ from, to, root: hex(mth(leaves.slice(0, to))) });
      }
    }
    expect(() => new TreeAccumulator(3).root()).toThrow(/no root of its own/);
    expect(() => new TreeAccumulator().append(1, leaves[0]!)).not.toThrow();
    const odd = new TreeAccumulator();
    odd.appendLeaf(leaves[0]!);
    expect(() => odd.append(1, leaves[1]!)).toThrow(/cannot start at leaf 1/);
  });

  it('refuses an inclusion proof with any hash, the index or the root changed (the size is bound through the root)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 300 }).chain((n) => fc.tuple(fc.constant(n), fc.nat(n - 1), fc.nat(64))),
        ([n, m, which]) => {
          const d = leavesOf(n);
          const root = mth(d);
          const proof = hashesOf(inclusionPlan(m, n), allNodes(d));
          expect(verifyInclusion(m, n, d[m]!, proof, root)).toBe(true);
          if (proof.length > 0) {
            const bad = proof.map((p) => Buffer.from(p));
            bad[which % bad.length]![0]! ^= 1;
            expect(verifyInclusion(m, n, d[m]!, bad, root)).toBe(false);
            expect(verifyInclusion(m, n, d[m]!, proof.slice(1), root)).toBe(false);
          }
          expect(verifyInclusion((m + 1) % n, n, d[m]!, proof, root)).toBe(false);
          expect(verifyInclusion(m, n, d[m]!, proof, mth(d.slice(0, n - 1)))).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('refuses a consistency proof with any hash changed, or between trees that do not extend', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 300 }).chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 1, max: n - 1 }), fc.nat(64))),
        ([n, m, which]) => {
          const d = leavesOf(n);
          const [from, to] = [mth(d.slice(0, m)), mth(d)];
          const proof = hashesOf(consistencyPlan(m, n), allNodes(d));
          expect(verifyConsistency(m, n, proof, from, to)).toBe(true);
          const bad = proof.map((p) => Buffer.from(p));
          bad[which % bad.length]![0]! ^= 1;
          expect(verifyConsistency(m, n, bad, from, to)).toBe(false);
          // A fork: the same size, one leaf before `from` changed.
          const forked = [...d];
          forked[which % m] = leafHash(Buffer.from('forked'));
          expect(verifyConsistency(m, n, proof, mth(forked.slice(0, m)), to)).toBe(false);
          expect(verifyConsistency(m, n, hashesOf(consistencyPlan(m, n), allNodes(forked)), from, mth(forked))).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('asks for O(log n) nodes, each a complete subtree of the tree it proves', () => {
    const n = 1_000_003;
    for (const m of [0, 1, 255, 256, 500_000, n - 1]) {
      const plan = inclusionPlan(m, n);
      expect(plan.nodes.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)));
      for (const node of plan.nodes) expect((node.index + 1) * 2 ** node.level).toBeLessThanOrEqual(n);
    }
    const plan = consistencyPlan(999_999, n);
    expect(plan.nodes.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)));
  });
});
