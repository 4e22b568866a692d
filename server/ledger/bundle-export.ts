/**
 * A bundle that carries its signed checkpoint: what `npm run ledger:export`
 * writes and the web interface's **Download a bundle** sends. The workspace's tree is first brought
 * up to its head and signed (the integrator's pass, run here: it takes the tree's row, so it runs
 * beside the service's own), and the bundle ends at the newest signed checkpoint: the note (with
 * the witnesses' cosignatures), the workspace's verifier keys, and the Merkle subtrees of the
 * events before the bundle's first, so the root over its events can be checked offline.
 */
import type { Database } from '@/db';
import type { BundleCheckpoint, BundleFrame, BundleHead } from './bundle-shape';
import { bundleFrame } from './bundle';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { newestCheckpoint } from './checkpoints';
import { integrateWorkspace } from './integrator';
import { nodeKey, rootPlan } from './merkle';
import { cosignedNote, listSigningKeys } from './proofs';
import { readHead } from './read';
import { readNodes } from './tiles';

/** Integrator passes at most before exporting (each adds up to 10,000 events to the tree). */
const PASSES = 1000;

/**
 * The frame of a bundle of the workspace's events after `after`, ending at the newest signed
 * checkpoint, which it carries. With no checkpoint to give (the tree on alarm, or one signed past
 * the head: events were cut), the bundle ends at the head and its checkpoint is null.
 */
export async function signedBundleFrame(
  db: Database,
  workspaceId: string,
  settings: SigningSettings,
  opts: { after?: number; previous?: BundleHead | null } = {},
): Promise<BundleFrame> {
  for (let pass = 0; pass < PASSES; pass++) {
    const { outcome } = await integrateWorkspace(db, workspaceId, settings);
    if (outcome !== 'extended' && outcome !== 'signed') break;
  }
  const signed = await newestCheckpoint(db, workspaceId);
  const head = (await readHead(db, workspaceId))?.sequence ?? 0;
  const after = opts.after ?? 0;
  if (!signed || signed.treeSize > head || signed.treeSize < after) {
    return { ...(await bundleFrame(db, workspaceId, opts)), checkpoint: null };
  }
  const frame = await bundleFrame(db, workspaceId, { ...opts, at: signed.treeSize });
  const plan = rootPlan(frame.from.sequence);
  const nodes = await readNodes(db, workspaceId, plan.nodes);
  const checkpoint: BundleCheckpoint = {
    note: (await cosignedNote(db, workspaceId, signed)).note,
    vkeys: (await listSigningKeys(db, workspaceId)).map((k) => k.vkey),
    // rootPlan's nodes of [0, from) are its subtrees, largest first.
    subtrees: plan.nodes.map((n) => nodes.get(nodeKey(n))!.toString('base64')),
  };
  return { ...frame, checkpoint };
}
