/**
 * Checking a bundle's signed checkpoint offline (docs/verification.md, "Offline proof"): the
 * note's signature with the workspace's verifier key (the one pinned with --vkey, or else one the
 * bundle lists), that it is this workspace's log and the tree of the bundle's head, and that the
 * Merkle root over the bundle's events, after the subtrees of the events before them, is the
 * signed root. Pure: no database, as every bundle check.
 */
import type { BundleFrame } from './bundle-shape';
import type { ChainBreak, CheckpointCheck } from './chain';
import { TreeAccumulator } from './merkle';
import { parseCheckpoint, parseNote, parseVkey, verifyNote, type NoteVerifier } from './note';

/** What a bundle's checkpoint check found: the check to report, and the break when it does not hold. */
export interface BundleCheckpointFinding {
  checkpoint: (CheckpointCheck & { pinned: boolean }) | null;
  broken: ChainBreak | null;
}

const fault = (sequence: number, reason: ChainBreak['reason'], expected: string, actual: string): ChainBreak => ({
  sequence,
  eventId: null,
  reason,
  expected,
  actual,
});

function verifiersOf(vkeys: readonly string[]): NoteVerifier[] {
  const verifiers: NoteVerifier[] = [];
  for (const vkey of vkeys) {
    try {
      verifiers.push(parseVkey(vkey));
    } catch {
      // A key that is not one verifies nothing; the others may.
    }
  }
  return verifiers;
}

/**
 * Judges the checkpoint of a bundle whose chain verified. `tree` holds the Merkle nodes of the
 * bundle's events (from `frame.from.sequence`); `pinned` is the verifier key given with --vkey.
 */
export function judgeBundleCheckpoint(frame: BundleFrame, tree: TreeAccumulator | null, pinned?: string): BundleCheckpointFinding {
  const head = frame.head.sequence;
  const signedBy = pinned ? `the pinned key ${pinned.split('+')[0]}` : 'a key the bundle lists';
  if (!frame.checkpoint) {
    if (!pinned) return { checkpoint: null, broken: null };
    return {
      checkpoint: null,
      broken: fault(head, 'checkpoint_signature_invalid', `a checkpoint signed by ${signedBy}`, 'a bundle with no checkpoint'),
    };
  }
  let text: string;
  let size: number;
  let root: Buffer;
  let origin: string;
  try {
    ({ text } = parseNote(frame.checkpoint.note));
    ({ origin, size, root } = parseCheckpoint(text));
  } catch (err) {
    return { checkpoint: null, broken: fault(head, 'checkpoint_signature_invalid', 'a signed checkpoint note', (err as Error).message) };
  }
  const verifiers = pinned ? verifiersOf([pinned]) : verifiersOf(frame.checkpoint.vkeys);
  const key = verifiers.find((v) => verifyNote(frame.checkpoint!.note, v));
  const check = {
    treeSize: size,
    rootHash: root.toString('base64'),
    keyId: key ? key.keyId.toString('hex') : '',
    holds: false,
    pinned: Boolean(pinned),
  };
  const broken = (b: ChainBreak): BundleCheckpointFinding => ({ checkpoint: check, broken: b });
  if (!key) return broken(fault(size, 'checkpoint_signature_invalid', `a note signed by ${signedBy}`, 'a signature that does not verify'));
  if (!origin.endsWith(`/workspaces/${frame.workspaceId}`)) {
    return broken(fault(size, 'checkpoint_signature_invalid', `the log of workspace ${frame.workspaceId}`, `the log ${origin}`));
  }
  if (size > head) {
    return broken(
      fault(
        head + 1,
        'checkpoint_beyond_head',
        `a chain of at least ${size} events (the signed checkpoint's tree size)`,
        `the bundle ends at ${head}`,
      ),
    );
  }
  if (size < head) {
    return broken(
      fault(size, 'checkpoint_root_mismatch', `a checkpoint of the bundle's head (tree size ${head})`, `one of tree size ${size}`),
    );
  }
  let computed: Buffer;
  try {
    const whole = TreeAccumulator.resume(
      frame.from.sequence,
      frame.checkpoint.subtrees.map((h) => Buffer.from(h, 'base64')),
    );
    if (!tree || tree.begin !== frame.from.sequence || tree.end !== head) throw new Error(`the bundle's events do not reach ${head}`);
    whole.extend(tree);
    computed = whole.root();
  } catch (err) {
    return broken(fault(size, 'checkpoint_root_mismatch', root.toString('base64'), (err as Error).message));
  }
  if (!computed.equals(root)) return broken(fault(size, 'checkpoint_root_mismatch', root.toString('base64'), computed.toString('base64')));
  return { checkpoint: { ...check, holds: true }, broken: null };
}
