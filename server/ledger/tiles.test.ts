/**
 * The tile store's edge (tiles.ts) against RFC 9162's root: a tree grown in passes of any sizes,
 * from an edge kept between passes or one built again from the tiles each time, has the root
 * rootOfLeaves gives, and its tiles hold exactly what one pass over all the leaves writes. The
 * tiles live in a map here, written as writeTilesOf's statement writes them (the first `start`
 * hashes kept, the new ones after).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leafHash, rootOfLeaves } from './merkle';
import { edgeOf, extendTree, heldLeaf, tilesOfEdge, type Edge } from './tiles';

const leaves = Array.from({ length: 70_000 }, (_, i) => leafHash(Buffer.from(`leaf ${i}`)));

type Tiles = Map<string, Buffer>;

function write(tiles: Tiles, grown: ReturnType<typeof extendTree>): void {
  for (const t of grown.tiles) {
    const key = `${t.level}/${t.idx}`;
    const stored = tiles.get(key) ?? Buffer.alloc(0);
    expect(stored.length, `tile ${key} holds what the write keeps`).toBe(t.start * 32);
    tiles.set(key, Buffer.concat([stored, t.hashes]));
  }
}

const lookup = (tiles: Tiles) => (level: number, idx: number) => tiles.get(`${level}/${idx}`);

/** Grows a tree over `leaves` in passes of the given sizes; `keep` carries the edge between passes. */
function grow(passes: number[], keep: boolean): { tiles: Tiles; roots: [number, Buffer][] } {
  const tiles: Tiles = new Map();
  const roots: [number, Buffer][] = [];
  let size = 0;
  let edge: Edge = edgeOf(0, lookup(tiles));
  for (const n of passes) {
    if (!keep) {
      // As a pass without a kept edge reads it: only the tiles tilesOfEdge names.
      const read = new Map(
        tilesOfEdge(size).flatMap((t) =>
          tiles.has(`${t.level}/${t.idx}`) ? [[`${t.level}/${t.idx}`, tiles.get(`${t.level}/${t.idx}`)!]] : [],
        ),
      );
      edge = edgeOf(size, lookup(read));
      if (size > 0) expect(heldLeaf(size, lookup(read))!.equals(leaves[size - 1]!)).toBe(true);
    }
    const grown = extendTree(edge, leaves.slice(size, size + n));
    write(tiles, grown);
    size = grown.size;
    roots.push([size, grown.root]);
  }
  return { tiles, roots };
}

describe('the tile store’s edge', () => {
  it('grows across tile and tile-level boundaries to the RFC 9162 root, kept or read again', () => {
    const passes = [1, 1, 254, 1, 1, 255, 256, 300, 65_536 - 1_069, 1, 2, 3_000];
    const whole = grow([passes.reduce((a, b) => a + b)], true);
    for (const keep of [true, false]) {
      const { tiles, roots } = grow(passes, keep);
      for (const [size, root] of roots) expect(root.equals(rootOfLeaves(leaves.slice(0, size))), `root at ${size}`).toBe(true);
      expect([...tiles.keys()].sort()).toEqual([...whole.tiles.keys()].sort());
      for (const [key, hashes] of tiles) expect(hashes.equals(whole.tiles.get(key)!), `tile ${key}`).toBe(true);
    }
  });

  it('gives the RFC 9162 root for passes of any sizes (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 8 }), fc.boolean(), (passes, keep) => {
        for (const [size, root] of grow(passes, keep).roots) expect(root.equals(rootOfLeaves(leaves.slice(0, size)))).toBe(true);
      }),
      { numRuns: 40 },
    );
  });
});
