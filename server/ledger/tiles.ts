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
import { sql, type SQL } from 'drizzle-orm';
import { query, type Executor } from '@/db';
import { EMPTY_ROOT, hashesOf, interiorHash, nodeKey, rootPlan, type TreeNode } from './merkle';

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

/**
 * A scalar subquery for the hash of leaf `index` as its tile holds it (null when no tile holds it),
 * for a statement that reads it beside other rows: the integrator's check of the last leaf it
 * holds rides on its read of the new events, one round trip instead of two.
 */
export function leafHashSql(workspaceId: string, index: number): SQL {
  const { tile, offset } = placeOf({ level: 0, index });
  return sql`(select substring(hashes from ${offset * HASH + 1}::int for ${HASH}::int) from ledger_tree_tiles
               where workspace_id = ${workspaceId} and level = 0 and idx = ${tile.idx}::bigint)`;
}

/**
 * The right edge of a tree of `size` leaves: per tile level, the index of its last tile and the
 * hashes it holds so far (none when the level's last tile is full, or the level is empty).
 */
interface Edge {
  size: number;
  /** Per tile level: the last tile's index and its hashes (each 32 bytes). */
  tiles: { idx: number; hashes: Buffer[] }[];
}

/** How many nodes a tree of `size` leaves has at tile level `level` (height 8·level). */
function countAt(size: number, level: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/** Reads the edge of the tree of `size` leaves: its partly filled tiles, one per level (one query). */
async function readEdge(db: Executor, workspaceId: string, size: number): Promise<Edge> {
  const refs: TileRef[] = [];
  for (let level = 0; countAt(size, level) > 0; level++) refs.push({ level, idx: Math.floor(countAt(size, level) / TILE_WIDTH) });
  const tiles: Edge['tiles'] = refs.map((r) => ({ idx: r.idx, hashes: [] }));
  const partial = refs.filter((r) => countAt(size, r.level) % TILE_WIDTH > 0);
  if (partial.length > 0) {
    const rows = await query<{ level: number; hashes: Uint8Array }>(
      db,
      sql`select level, hashes from ledger_tree_tiles
           where workspace_id = ${workspaceId} and (level, idx) in (${sql.join(
             partial.map((t) => sql`(${t.level}::smallint, ${t.idx}::bigint)`),
             sql`, `,
           )})`,
    );
    for (const row of rows) {
      const want = countAt(size, row.level) % TILE_WIDTH;
      const hashes = Buffer.from(row.hashes);
      // A tile holding more than the tree's size says is fine (a tree rebuilt shorter reuses it);
      // one holding less is not: the tree's record and its tiles disagree.
      if (hashes.length < want * HASH)
        throw new Error(`tile ${row.level}/${refs[row.level]!.idx} holds ${hashes.length / HASH} hashes, the tree needs ${want}`);
      tiles[row.level]!.hashes = hashesIn(hashes, 0, want);
    }
    for (const r of partial) {
      if (tiles[r.level]!.hashes.length === 0) throw new Error(`tile ${r.level}/${r.idx} of a tree of ${size} is missing`);
    }
  }
  return { size, tiles };
}

/**
 * Adds `leaves` (leaf hashes, in order) to the edge in memory and says which tiles changed, with
 * their whole contents: the tiles to write. The edge is left describing the larger tree.
 */
function extendEdge(edge: Edge, leaves: readonly Buffer[]): Map<string, TileRef & { hashes: Buffer }> {
  const changed = new Map<string, TileRef & { hashes: Buffer }>();
  const push = (level: number, hash: Buffer): void => {
    const tile = (edge.tiles[level] ??= { idx: 0, hashes: [] });
    tile.hashes.push(hash);
    changed.set(tileKey({ level, idx: tile.idx }), { level, idx: tile.idx, hashes: Buffer.concat(tile.hashes) });
    if (tile.hashes.length === TILE_WIDTH) {
      const root = perfectRoot(tile.hashes);
      edge.tiles[level] = { idx: tile.idx + 1, hashes: [] };
      push(level + 1, root);
    }
  };
  for (const leaf of leaves) push(0, leaf);
  edge.size += leaves.length;
  return changed;
}

/** The edge's tiles as a lookup for nodeHashesFrom: every node of the tree's root lies in them. */
function edgeTiles(edge: Edge, written: ReadonlyMap<string, { hashes: Buffer }>): (level: number, idx: number) => Buffer | undefined {
  return (level, idx) => {
    const tile = edge.tiles[level];
    if (tile && tile.idx === idx && tile.hashes.length > 0) return Buffer.concat(tile.hashes);
    return written.get(tileKey({ level, idx }))?.hashes;
  };
}

/**
 * Writes changed tiles. A tile already there may only grow: the update applies when the stored
 * hashes are a prefix of the new ones, and otherwise the statement fails (a published hash
 * would change).
 */
export async function writeTiles(db: Executor, workspaceId: string, tiles: Iterable<TileRef & { hashes: Buffer }>): Promise<void> {
  const list = [...tiles];
  if (list.length === 0) return;
  const values = sql.join(
    list.map((t) => sql`(${workspaceId}::uuid, ${t.level}::smallint, ${t.idx}::bigint, ${t.hashes}::bytea)`),
    sql`, `,
  );
  const rows = await query<{ idx: number }>(
    db,
    sql`insert into ledger_tree_tiles as t (workspace_id, level, idx, hashes) values ${values}
        on conflict (workspace_id, level, idx) do update set hashes = excluded.hashes
          where substring(excluded.hashes from 1 for length(t.hashes)) = t.hashes
        returning idx`,
  );
  if (rows.length !== list.length) throw new Error('a tile write would change hashes already in the tree');
}

/**
 * Adds `leaves` (leaf hashes, in order) to the workspace's stored tree of `size` leaves: reads its
 * edge, writes the tiles that change, and returns the larger tree's size and root. What the
 * integrator does each pass, and a rebuild over the whole ledger.
 */
export async function growTree(
  db: Executor,
  workspaceId: string,
  size: number,
  leaves: readonly Buffer[],
): Promise<{ size: number; root: Buffer }> {
  const edge = await readEdge(db, workspaceId, size);
  const written = extendEdge(edge, leaves);
  await writeTiles(db, workspaceId, written.values());
  const plan = rootPlan(edge.size);
  return { size: edge.size, root: hashesOf(plan, nodeHashesFrom(plan.nodes, edgeTiles(edge, written)))[0] ?? EMPTY_ROOT };
}
