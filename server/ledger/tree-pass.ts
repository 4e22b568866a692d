/**
 * What both kinds of integrator pass share (a workspace's own, integrator.ts, and several at once,
 * integrate-together.ts): what a pass did, the edges this process kept, reading a pass's tiles,
 * checking the events against the tree, and raising the alarm when they no longer match.
 */
import { eq } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { ledgerTrees } from '@/db/schema';
import { eventLeafHash } from './merkle';
import { edgeOf, heldLeaf, lastLeafTile, readTiles, tilesOfEdge, type Edge, type TileRead } from './tiles';

/** What one pass over a workspace did. */
export type Integration =
  | { workspaceId: string; outcome: 'extended'; from: number; to: number; root: Buffer }
  | { workspaceId: string; outcome: 'signed'; size: number; root: Buffer }
  | { workspaceId: string; outcome: 'current' }
  | { workspaceId: string; outcome: 'alarm'; alarm: string };

/** A workspace the integrator has work for: its tree's size (null before its tree row) and its head. */
export interface Behind {
  workspaceId: string;
  size: number | null;
  head: number;
}

export type EventRow = { sequence: number | string; event_hash: string };
/**
 * The edges of trees as this process last extended them, with each tree's size and root then. The
 * next pass starts from one (extendTree) when the tree is still that one, and reads only the last
 * leaf the tree holds (32 bytes) instead of its edge tiles: building an edge from them is up to
 * 255 hashes per tile level, and the tiles up to 8 KiB each way, every period, for every busy
 * workspace. A tree rebuilt or extended elsewhere no longer matches, and its entry is not used.
 * Bounded: the oldest entry goes first.
 */
const edgesKept = new Map<string, { size: number; root: Buffer; edge: Edge }>();
const MAX_EDGES_KEPT = 10_000;

function keptEdge(workspaceId: string, size: number, root: Buffer): Edge | undefined {
  const kept = edgesKept.get(workspaceId);
  return kept && kept.size === size && kept.root.equals(root) ? kept.edge : undefined;
}

export function keepEdge(workspaceId: string, edge: Edge, root: Buffer): void {
  edgesKept.delete(workspaceId);
  if (edgesKept.size >= MAX_EDGES_KEPT) edgesKept.delete(edgesKept.keys().next().value!);
  edgesKept.set(workspaceId, { size: edge.size, root, edge });
}

/** What a pass reads of a tree's tiles: the last leaf it holds, and its edge. */
interface PassTiles {
  held: Buffer | undefined;
  edge: () => Edge;
}

/**
 * Reads, for each tree, what a pass needs of its tiles, in one query for all of them: the last leaf
 * the tree holds, and the tiles of its edge unless this process kept the edge (keptEdge).
 */
export async function readPassTiles(
  tx: Executor,
  trees: readonly { workspaceId: string; size: number; root: Buffer }[],
): Promise<Map<string, PassTiles>> {
  const kept = new Map(trees.map((t) => [t.workspaceId, keptEdge(t.workspaceId, t.size, t.root)]));
  // Each tile wanted: whole, or only the last leaf.
  const tiles = await readTiles(
    tx,
    trees.flatMap((t): TileRead[] => {
      if (!kept.get(t.workspaceId)) return tilesOfEdge(t.size).map((ref) => ({ workspaceId: t.workspaceId, ...ref }));
      if (t.size === 0) return [];
      const { level, idx, offset } = lastLeafTile(t.size);
      return [{ workspaceId: t.workspaceId, level, idx, first: offset * 32 + 1, len: 32 }];
    }),
  );
  return new Map(
    trees.map((t): [string, PassTiles] => {
      const tileOf = (level: number, idx: number) => tiles.get(`${t.workspaceId}/${level}/${idx}`);
      const edge = kept.get(t.workspaceId);
      if (!edge) return [t.workspaceId, { held: t.size > 0 ? heldLeaf(t.size, tileOf) : undefined, edge: () => edgeOf(t.size, tileOf) }];
      const held = t.size > 0 ? tileOf(0, lastLeafTile(t.size).idx) : undefined;
      return [t.workspaceId, { held: held?.length === 32 ? held : undefined, edge: () => edge }];
    }),
  );
}

/**
 * Checks the events read for a pass against the tree of `size`: they run from the event at the
 * tree's size (or the first) to `to` without a gap, and the first is the leaf the tree holds.
 * `held` is the tree's last leaf as its tile holds it. Returns the alarm to raise, or null when
 * they match; throws when the tiles lack the leaf.
 */
export function mismatchOf(size: number, head: number, to: number, events: readonly EventRow[], held: Buffer | undefined): string | null {
  let expected = Math.max(size, 1);
  for (const event of events) {
    if (Number(event.sequence) !== expected) break;
    expected++;
  }
  if (expected !== to + 1 && to >= Math.max(size, 1))
    return `event ${expected} is missing (the tree holds ${size}, the head is at ${head})`;
  if (size > 0) {
    if (!held) throw new Error(`tree node 0/${size - 1} is not in the tiles`);
    if (!eventLeafHash(events[0]!.event_hash).equals(held)) return `event ${size} is not the one the tree holds`;
  }
  return null;
}

export async function raiseAlarm(tx: Tx, workspaceId: string, alarm: string): Promise<Integration> {
  await tx.update(ledgerTrees).set({ alarm, alarmAt: new Date() }).where(eq(ledgerTrees.workspaceId, workspaceId));
  return { workspaceId, outcome: 'alarm', alarm };
}
