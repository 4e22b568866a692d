/**
 * Integrator passes over several workspaces at once: those a few events behind, in one transaction
 * of a few statements for all of them (integrator.ts runs them, and a pass of its own for the rest).
 */
import { sql } from 'drizzle-orm';
import { query, type Database } from '@/db';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { signedCheckpointRow } from './checkpoints';
import { eventLeafHash } from './merkle';
import { extendTree, writeTilesOf, type TileWrite } from './tiles';
import { keepEdge, mismatchOf, raiseAlarm, readPassTiles, type Behind, type EventRow, type Integration } from './tree-pass';

/**
 * How far behind a workspace may be to go in a pass together with others, and how many events
 * and workspaces one such pass takes at most. A workspace further behind (a backlog, a rebuild)
 * gets passes of its own, BATCH events each.
 */
const TOGETHER_BEHIND = 1_000;
const TOGETHER_EVENTS = 10_000;
const TOGETHER_WORKSPACES = 256;

/**
 * One pass over several workspaces at once: their new events into their trees and a signed
 * checkpoint each, in one transaction of seven statements, whatever their number (a pass of its
 * own is seven per workspace, and at 64 busy workspaces those passes cost the server a third of
 * a millisecond of CPU per request: docs/performance.md). It takes only the tree rows no other
 * transaction holds (SKIP LOCKED), of workspaces that have a signing key and a few new events.
 * Returns what it did for those it took; the others are left for integrateWorkspace, as is a
 * workspace whose tiles would change (it fails there, alone, and is logged).
 */
export async function integrateTogether(db: Database, ids: readonly string[], settings: SigningSettings): Promise<Integration[]> {
  return db.transaction(async (tx) => {
    const trees = (
      await query<{
        workspace_id: string;
        size: number | string;
        root: Uint8Array;
        head: number | string;
        key_id: string;
        name: string;
        private_key_cipher: string;
      }>(
        tx,
        sql`select t.workspace_id, t.size, t.root, h.sequence as head, k.key_id, k.name, k.private_key_cipher
              from ledger_trees t
              join ledger_heads h on h.workspace_id = t.workspace_id
              join ledger_signing_keys k on k.workspace_id = t.workspace_id and k.retired_at is null
             where t.workspace_id = any(string_to_array(${ids.join(',')}::text, ',')::uuid[])
               and t.alarm is null and h.sequence > t.size and h.sequence - t.size <= ${TOGETHER_BEHIND}
             order by t.workspace_id
               for update of t skip locked`,
      )
    ).map((r) => ({
      workspaceId: r.workspace_id,
      size: Number(r.size),
      root: Buffer.from(r.root),
      head: Number(r.head),
      key: { keyId: r.key_id, name: r.name, privateKeyCipher: r.private_key_cipher },
    }));
    if (trees.length === 0) return [];
    // The event at each tree's size (to check it still is the one the tree holds), then the new ones.
    const events = await query<EventRow & { workspace_id: string }>(
      tx,
      sql`select e.workspace_id, e.sequence, e.event_hash
            from jsonb_to_recordset(${JSON.stringify(trees.map((t) => ({ ws: t.workspaceId, first: Math.max(t.size, 1), last: t.head })))}::jsonb)
                 as w(ws uuid, first bigint, last bigint)
            join ledger_events e on e.workspace_id = w.ws and e.sequence between w.first and w.last
           order by e.workspace_id, e.sequence`,
    );
    const eventsOf = new Map<string, EventRow[]>();
    for (const e of events) (eventsOf.get(e.workspace_id) ?? eventsOf.set(e.workspace_id, []).get(e.workspace_id)!).push(e);
    const tilesOf = await readPassTiles(tx, trees);

    const done: Integration[] = [];
    const grownTrees: { workspaceId: string; from: number; size: number; root: Buffer; key: (typeof trees)[number]['key'] }[] = [];
    const writes: TileWrite[] = [];
    for (const tree of trees) {
      const mine = eventsOf.get(tree.workspaceId) ?? [];
      const tiles = tilesOf.get(tree.workspaceId)!;
      try {
        const alarm = mismatchOf(tree.size, tree.head, tree.head, mine, tiles.held);
        if (alarm) {
          done.push(await raiseAlarm(tx, tree.workspaceId, alarm));
          continue;
        }
        const edge = tiles.edge();
        const grown = extendTree(
          edge,
          (tree.size > 0 ? mine.slice(1) : mine).map((e) => eventLeafHash(e.event_hash)),
        );
        keepEdge(tree.workspaceId, edge, grown.root);
        grownTrees.push({ workspaceId: tree.workspaceId, from: tree.size, size: grown.size, root: grown.root, key: tree.key });
        for (const tile of grown.tiles) writes.push({ workspaceId: tree.workspaceId, ...tile });
      } catch {
        // Tiles that disagree with the tree's record: its own pass says so (and fails) after this one.
      }
    }
    const refused = await writeTilesOf(tx, writes);
    const signed = grownTrees.filter((t) => !refused.has(t.workspaceId));
    if (signed.length > 0) {
      await query(
        tx,
        sql`update ledger_trees t set size = w.size, root = decode(w.root, 'hex'), updated_at = now()
              from jsonb_to_recordset(${JSON.stringify(signed.map((g) => ({ ws: g.workspaceId, size: g.size, root: g.root.toString('hex') })))}::jsonb)
                   as w(ws uuid, size bigint, root text)
             where t.workspace_id = w.ws`,
      );
      const checkpoints = signed.map((g) => signedCheckpointRow(g.workspaceId, g.size, g.root, g.key, settings));
      await query(
        tx,
        sql`insert into ledger_checkpoints (workspace_id, tree_size, root, note, key_id)
            select c."workspaceId", c."treeSize", decode(c.root, 'hex'), c.note, c."keyId"
              from jsonb_to_recordset(${JSON.stringify(checkpoints.map((c) => ({ ...c, root: c.root.toString('hex') })))}::jsonb)
                   as c("workspaceId" uuid, "treeSize" bigint, root text, note text, "keyId" text)
            on conflict do nothing`,
      );
    }
    for (const g of signed) done.push({ workspaceId: g.workspaceId, outcome: 'extended', from: g.from, to: g.size, root: g.root });
    return done;
  });
}

/**
 * The workspaces that may go in a pass together, in groups of at most TOGETHER_EVENTS new events
 * and TOGETHER_WORKSPACES workspaces: those with a tree row, a few new events, and nothing else
 * to do (a tree rebuilt and not yet signed, or ahead of its head, gets a pass of its own).
 */
export function togetherGroups(behind: readonly Behind[]): string[][] {
  const groups: string[][] = [];
  let group: string[] = [];
  let events = 0;
  for (const w of behind) {
    if (w.size === null || w.head <= w.size || w.head - w.size > TOGETHER_BEHIND) continue;
    if (group.length === TOGETHER_WORKSPACES || events + (w.head - w.size) > TOGETHER_EVENTS) {
      groups.push(group);
      group = [];
      events = 0;
    }
    group.push(w.workspaceId);
    events += w.head - w.size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
