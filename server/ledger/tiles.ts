/**
 * The tile store: a workspace's Merkle tree (merkle.ts) kept in `ledger_tree_tiles`, in tiles of
 * up to 256 hashes (db/schema/tree.ts). A node at height h lies in the tile level ⌊h/8⌋, made of
 * at most 128 adjacent hashes of that level, so any node is one tile away, and a proof or a root
 * (at most two nodes per level of the tree) reads a handful of tiles in one query.
 *
 * Tiles are written only by the integrator (integrator.ts), which extends the right edge: the
 * hashes of new leaves go into the level-0 edge tile, and each tile that fills adds its root to
 * the edge tile of the level above. An upsert that would change a hash already written is refused
 * by the statement itself, so a published part of the tree is never rewritten.
 */
import { sql } from 'drizzle-orm';
import { query, type Executor } from '@/db';
import { EMPTY_ROOT, foldNodes, interiorHash, nodeKey, type TreeNode } from './merkle';

/** Tree levels per tile level, and hashes per tile. */
const TILE_HEIGHT = 8;
const TILE_WIDTH = 2 ** TILE_HEIGHT;
const HASH = 32;

/** A tile's place: its level and index. */
interface TileRef {
  level: number;
  idx: number;
}
const tileKey = (t: TileRef) => `${t.level}/${t.idx}`;

/** Where a node's hashes lie: its tile, the first hash's offset in it, and how many (2^(h mod 8)). */
function placeOf(node: TreeNode): { tile: TileRef; offset: number; count: number } {
  const level = Math.floor(node.level / TILE_HEIGHT);
  const count = 2 ** (node.level - level * TILE_HEIGHT);
  const first = node.index * count;
  return { tile: { level, idx: Math.floor(first / TILE_WIDTH) }, offset: first % TILE_WIDTH, count };
}

/** The root of a perfect tree over `hashes` (a power of two of them). */
function perfectRoot(hashes: Buffer[]): Buffer {
  let level = hashes;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(interiorHash(level[i]!, level[i + 1]!));
    level = next;
  }
  return level[0]!;
}

function hashesIn(tile: Buffer, offset: number, count: number): Buffer[] {
  return Array.from({ length: count }, (_, i) => tile.subarray((offset + i) * HASH, (offset + i + 1) * HASH));
}

/** The nodes' hashes (by nodeKey) from tiles at hand; throws when a tile is missing or too short. */
function nodeHashesFrom(nodes: readonly TreeNode[], tileOf: (level: number, idx: number) => Buffer | undefined): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const node of nodes) {
    const { tile, offset, count } = placeOf(node);
    const hashes = tileOf(tile.level, tile.idx);
    if (!hashes || hashes.length < (offset + count) * HASH) throw new Error(`tree node ${nodeKey(node)} is not in the tiles`);
    out.set(nodeKey(node), perfectRoot(hashesIn(hashes, offset, count)));
  }
  return out;
}

/** Reads the tiles `nodes` lie in (one query) and gives the nodes' hashes. */
export async function readNodes(db: Executor, workspaceId: string, nodes: readonly TreeNode[]): Promise<Map<string, Buffer>> {
  if (nodes.length === 0) return new Map();
  const refs = new Map<string, TileRef>();
  for (const node of nodes) {
    const { tile } = placeOf(node);
    refs.set(tileKey(tile), tile);
  }
  const wanted = sql.join(
    [...refs.values()].map((t) => sql`(${t.level}::smallint, ${t.idx}::bigint)`),
    sql`, `,
  );
  const rows = await query<{ level: number; idx: number | string; hashes: Uint8Array }>(
    db,
    sql`select level, idx, hashes from ledger_tree_tiles
         where workspace_id = ${workspaceId} and (level, idx) in (${wanted})`,
  );
  const tiles = new Map(rows.map((r) => [tileKey({ level: r.level, idx: Number(r.idx) }), Buffer.from(r.hashes)]));
  return nodeHashesFrom(nodes, (level, idx) => tiles.get(tileKey({ level, idx })));
}

/** A perfect subtree's root on the right edge: its height within its tile level (0–7) and hash. */
interface RangeNode {
  height: number;
  hash: Buffer;
}

/**
 * The right edge of a tree of `size` leaves, per tile level: the index of its last tile, how many
 * hashes that tile holds, and the compact range of them (the roots of the perfect subtrees they
 * make, largest first: one per set bit of the count). The tree's root is the fold of all of them,
 * highest level first; a tile that fills is one node, the first hash of the tile above.
 */
export interface Edge {
  size: number;
  levels: { idx: number; count: number; range: RangeNode[] }[];
}

/** How many nodes a tree of `size` leaves has at tile level `level` (height 8·level). */
function countAt(size: number, level: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/** Adds `hash` to a compact range, merging the equal-height subtrees it completes. */
function pushRange(range: RangeNode[], hash: Buffer): void {
  let node: RangeNode = { height: 0, hash };
  while (range.length > 0 && range[range.length - 1]!.height === node.height) {
    node = { height: node.height + 1, hash: interiorHash(range.pop()!.hash, node.hash) };
  }
  range.push(node);
}

/** The partly filled edge tiles of a tree of `size` leaves, one per tile level that has one. */
function partialEdgeTiles(size: number): TileRef[] {
  const refs: TileRef[] = [];
  for (let level = 0; countAt(size, level) > 0; level++) {
    if (countAt(size, level) % TILE_WIDTH > 0) refs.push({ level, idx: Math.floor(countAt(size, level) / TILE_WIDTH) });
  }
  return refs;
}

/**
 * The tiles a pass over a tree of `size` leaves reads to build its edge (edgeOf): its partly
 * filled edge tiles, and the tile holding its last leaf (heldLeaf), which is the level-0 edge tile
 * unless that is full.
 */
export function tilesOfEdge(size: number): TileRef[] {
  const refs = partialEdgeTiles(size);
  if (size > 0 && size % TILE_WIDTH === 0) refs.push(lastLeafTile(size));
  return refs;
}

/** The level-0 tile holding the last leaf of a tree of `size` (> 0) leaves, and that leaf's offset in it. */
export function lastLeafTile(size: number): TileRef & { offset: number } {
  const { tile, offset } = placeOf({ level: 0, index: size - 1 });
  return { ...tile, offset };
}

/** The hash the tiles hold for the last leaf of a tree of `size` (> 0) leaves, if they hold it. */
export function heldLeaf(size: number, tileOf: (level: number, idx: number) => Buffer | undefined): Buffer | undefined {
  const { level, idx, offset } = lastLeafTile(size);
  const hashes = tileOf(level, idx);
  return hashes && hashes.length >= (offset + 1) * HASH ? hashes.subarray(offset * HASH, (offset + 1) * HASH) : undefined;
}

/**
 * The edge of the tree of `size` leaves from its tiles (tilesOfEdge says which): up to 255
 * hashes per tile level. Throws when a tile is short or missing.
 */
export function edgeOf(size: number, tileOf: (level: number, idx: number) => Buffer | undefined): Edge {
  const levels: Edge['levels'] = [];
  for (let level = 0; countAt(size, level) > 0; level++) {
    const count = countAt(size, level) % TILE_WIDTH;
    const idx = Math.floor(countAt(size, level) / TILE_WIDTH);
    const range: RangeNode[] = [];
    if (count > 0) {
      const hashes = tileOf(level, idx);
      if (!hashes) throw new Error(`tile ${level}/${idx} of a tree of ${size} is missing`);
      // A tile holding more than the tree's size says is fine (a tree rebuilt shorter reuses it);
      // one holding less is not: the tree's record and its tiles disagree.
      if (hashes.length < count * HASH)
        throw new Error(`tile ${level}/${idx} holds ${hashes.length / HASH} hashes, the tree needs ${count}`);
      for (const hash of hashesIn(hashes, 0, count)) pushRange(range, hash);
    }
    levels.push({ idx, count, range });
  }
  return { size, levels };
}

/** A tile to read, of any workspace's tree: `len` of its bytes from byte `first` (1-based), or all of it. */
export type TileRead = TileRef & { workspaceId: string; first?: number; len?: number };

/** Reads tiles (or parts of them) of one or several trees in one query; by `${workspaceId}/${level}/${idx}`. */
export async function readTiles(db: Executor, wanted: readonly TileRead[]): Promise<Map<string, Buffer>> {
  const tiles = new Map<string, Buffer>();
  if (wanted.length === 0) return tiles;
  const rows = await query<{ workspace_id: string; level: number; idx: number | string; hashes: Uint8Array }>(
    db,
    sql`select t.workspace_id, t.level, t.idx, substring(t.hashes from w.first for w.len) as hashes
          from jsonb_to_recordset(${JSON.stringify(wanted.map((w) => ({ ...w, first: w.first ?? 1, len: w.len ?? TILE_WIDTH * HASH })))}::jsonb)
               as w("workspaceId" uuid, level smallint, idx bigint, first int, len int)
          join ledger_tree_tiles t on t.workspace_id = w."workspaceId" and t.level = w.level and t.idx = w.idx`,
  );
  for (const r of rows) tiles.set(`${r.workspace_id}/${r.level}/${Number(r.idx)}`, Buffer.from(r.hashes));
  return tiles;
}

/** Reads the edge of the tree of `size` leaves: its partly filled tiles, one per level (one query). */
async function readEdge(db: Executor, workspaceId: string, size: number): Promise<Edge> {
  const tiles = await readTiles(
    db,
    partialEdgeTiles(size).map((t) => ({ workspaceId, ...t })),
  );
  return edgeOf(size, (level, idx) => tiles.get(`${workspaceId}/${level}/${idx}`));
}

/** The root of the tree an edge describes: its compact ranges folded, the highest level's first. */
function rootOfEdge(edge: Edge): Buffer {
  const largestFirst = edge.levels.toReversed().flatMap((l) => l.range.map((n) => n.hash));
  return largestFirst.length === 0 ? EMPTY_ROOT : foldNodes(largestFirst);
}

/**
 * A tile write: the hashes to put in the tile from hash `start` on (0: the whole tile). Growing a
 * tile sends only its new hashes.
 */
export type TileWrite = TileRef & { workspaceId: string; start: number; hashes: Buffer };

/**
 * Adds `leaves` (leaf hashes, in order) to the edge of a tree in memory: the larger tree's size
 * and root, and the tile writes that store them (each tile's new hashes, and the tile above's
 * when one fills). The edge is left describing the larger tree, and can be extended again.
 */
export function extendTree(edge: Edge, leaves: readonly Buffer[]): { size: number; root: Buffer; tiles: Omit<TileWrite, 'workspaceId'>[] } {
  const writes = new Map<string, { level: number; idx: number; start: number; hashes: Buffer[] }>();
  const push = (level: number, hash: Buffer): void => {
    const tile = (edge.levels[level] ??= { idx: 0, count: 0, range: [] });
    const key = tileKey({ level, idx: tile.idx });
    let write = writes.get(key);
    if (!write) writes.set(key, (write = { level, idx: tile.idx, start: tile.count, hashes: [] }));
    write.hashes.push(hash);
    tile.count++;
    pushRange(tile.range, hash);
    if (tile.count === TILE_WIDTH) {
      // The tile is full: its range is one node, its root, the next hash of the level above.
      const root = tile.range[0]!.hash;
      edge.levels[level] = { idx: tile.idx + 1, count: 0, range: [] };
      push(level + 1, root);
    }
  };
  for (const leaf of leaves) push(0, leaf);
  edge.size += leaves.length;
  const tiles = [...writes.values()].map((w) => ({ level: w.level, idx: w.idx, start: w.start, hashes: Buffer.concat(w.hashes) }));
  return { size: edge.size, root: rootOfEdge(edge), tiles };
}

/**
 * Writes tiles, of one workspace's tree or of several (the integrator's pass over many), in one
 * statement. A tile already there may only grow: a write applies when the stored hashes are a
 * prefix of what the tile becomes (its first `start` hashes, kept as they are, then the new
 * ones), and a write from `start` > 0 applies only to a tile that holds at least `start`. Returns
 * the workspaces with a write that was refused (a published hash would change, or a tile is
 * short); the others' are written.
 */
export async function writeTilesOf(db: Executor, tiles: readonly TileWrite[]): Promise<Set<string>> {
  if (tiles.length === 0) return new Set();
  const values = tiles.map((t) => ({
    ws: t.workspaceId,
    level: t.level,
    idx: t.idx,
    kept: t.start * HASH,
    hashes: t.hashes.toString('hex'),
  }));
  const rows = await query<{ workspace_id: string; level: number; idx: number | string }>(
    db,
    sql`with w as (
          select ws, level, idx, kept, decode(hashes, 'hex') as hashes
            from jsonb_to_recordset(${JSON.stringify(values)}::jsonb) as w(ws uuid, level smallint, idx bigint, kept int, hashes text)),
        grown as (
          update ledger_tree_tiles t set hashes = substring(t.hashes from 1 for w.kept) || w.hashes
            from w
           where w.kept > 0 and t.workspace_id = w.ws and t.level = w.level and t.idx = w.idx
             and length(t.hashes) between w.kept and w.kept + length(w.hashes)
             and substring(t.hashes from w.kept + 1) = substring(w.hashes from 1 for length(t.hashes) - w.kept)
          returning t.workspace_id, t.level, t.idx),
        made as (
          insert into ledger_tree_tiles as t (workspace_id, level, idx, hashes)
          select ws, level, idx, hashes from w where kept = 0
          on conflict (workspace_id, level, idx) do update set hashes = excluded.hashes
            where substring(excluded.hashes from 1 for length(t.hashes)) = t.hashes
          returning t.workspace_id, t.level, t.idx)
        select * from grown union all select * from made`,
  );
  const written = new Set(rows.map((r) => `${r.workspace_id}/${r.level}/${Number(r.idx)}`));
  return new Set(tiles.filter((t) => !written.has(`${t.workspaceId}/${t.level}/${t.idx}`)).map((t) => t.workspaceId));
}

/** Writes tiles of one workspace's tree (whole when `start` is left out); throws when one is refused. */
export async function writeTiles(
  db: Executor,
  workspaceId: string,
  tiles: Iterable<TileRef & { start?: number; hashes: Buffer }>,
): Promise<void> {
  const refused = await writeTilesOf(
    db,
    [...tiles].map((t) => ({ start: 0, ...t, workspaceId })),
  );
  if (refused.size > 0) throw new Error('a tile write would change hashes already in the tree');
}

/**
 * Adds `leaves` (leaf hashes, in order) to the workspace's stored tree of `size` leaves: reads its
 * edge, writes the tiles that change, and returns the larger tree's size and root. What a rebuild
 * does over the whole ledger.
 */
export async function growTree(
  db: Executor,
  workspaceId: string,
  size: number,
  leaves: readonly Buffer[],
): Promise<{ size: number; root: Buffer }> {
  const grown = extendTree(await readEdge(db, workspaceId, size), leaves);
  await writeTiles(db, workspaceId, grown.tiles);
  return { size: grown.size, root: grown.root };
}
