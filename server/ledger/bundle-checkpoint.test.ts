/**
 * A bundle's signed checkpoint checked offline (bundle-checkpoint.ts), in memory (verifyBundle)
 * and as a file streamed through worker threads (verifyBundleFile), which must agree: the
 * signature, with a pinned key or one the bundle lists; the log it names; the size of the
 * bundle's head; and the root over its events after the subtrees before them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleOf, sealedChain } from '@/test/support/chain';
import { bundleText, verifyBundle, type BundleReport, type LedgerBundle } from './bundle';
import { verifyBundleFile } from './bundle-file';
import type { LedgerEvent } from './canonical';
import { eventLeafHash, rootOfLeaves, TreeAccumulator } from './merkle';
import { checkpointText, generateNoteKey, signNote, vkeyOf, type NoteKey } from './note';

const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-bundle-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const originOf = (workspaceId: string) => `aws.example.test/workspaces/${workspaceId}`;

/** A bundle of `events` after `after`, carrying the checkpoint `key` signs of the first `size` events (its head by default). */
function signedBundle(events: LedgerEvent[], key: NoteKey, opts: { after?: number; size?: number; vkeys?: string[] } = {}): LedgerBundle {
  const after = opts.after ?? 0;
  const size = opts.size ?? events.length;
  const leaves = events.map((e) => eventLeafHash(e.eventHash));
  const before = new TreeAccumulator();
  for (const leaf of leaves.slice(0, after)) before.appendLeaf(leaf);
  const note = signNote(checkpointText(key.name, size, rootOfLeaves(leaves.slice(0, size))), key);
  return {
    ...bundleOf(events, after),
    checkpoint: {
      note,
      vkeys: opts.vkeys ?? [vkeyOf(key)],
      subtrees: before.hashes.map((h) => Buffer.from(h).toString('base64')),
    },
  };
}

/** verifyBundle's report, after checking that the streamed file gives the same. */
async function both(bundle: LedgerBundle, vkey?: string): Promise<BundleReport> {
  const pages: string[][] = [];
  for (let i = 0; i < bundle.events.length; i += 2) pages.push(bundle.events.slice(i, i + 2).map((e) => JSON.stringify(e)));
  let text = '';
  for await (const piece of bundleText(bundle, pages)) text += piece;
  const name = path.join(dir, `b${++files}.json`);
  writeFileSync(name, text);
  const inMemory = verifyBundle(JSON.parse(text), undefined, { vkey });
  expect(await verifyBundleFile(name, { batchBytes: 500, workers: 2, vkey })).toEqual(inMemory);
  return inMemory;
}

describe('a bundle’s signed checkpoint', { timeout: 30_000 }, () => {
  const events = sealedChain(13);
  const workspaceId = events[0]!.workspaceId;
  const key = generateNoteKey(originOf(workspaceId));

  it('holds for a whole chain and for a bundle after an earlier export, with the key it lists or one pinned', async () => {
    for (const after of [0, 1, 4, 8, 12, 13]) {
      const bundle = signedBundle(events, key, { after });
      const listed = await both(bundle);
      expect({ after, report: listed }).toMatchObject({
        after,
        report: {
          verified: true,
          checkpoint: {
            treeSize: 13,
            rootHash: rootOfLeaves(events.map((e) => eventLeafHash(e.eventHash))).toString('base64'),
            holds: true,
            pinned: false,
          },
        },
      });
      expect(await both(bundle, vkeyOf(key))).toMatchObject({ verified: true, checkpoint: { holds: true, pinned: true } });
    }
  });

  it('is BROKEN with another key pinned, a note changed after signing, or another workspace’s log', async () => {
    const other = generateNoteKey(originOf(workspaceId));
    expect(await both(signedBundle(events, key), vkeyOf(other))).toMatchObject({
      verified: false,
      firstBreak: { reason: 'checkpoint_signature_invalid', sequence: 13 },
    });
    const changed = signedBundle(events, key);
    changed.checkpoint!.note = changed.checkpoint!.note.replace('\n13\n', '\n12\n');
    expect(await both(changed)).toMatchObject({ verified: false, firstBreak: { reason: 'checkpoint_signature_invalid' } });
    // Listing the forger's key is no help once a key is pinned.
    const forged = signedBundle(events, other, { vkeys: [vkeyOf(other)] });
    expect(await both(forged)).toMatchObject({ verified: true });
    expect(await both(forged, vkeyOf(key))).toMatchObject({ verified: false, firstBreak: { reason: 'checkpoint_signature_invalid' } });
    const elsewhere = generateNoteKey(originOf('another-workspace'));
    expect(await both(signedBundle(events, elsewhere))).toMatchObject({
      verified: false,
      firstBreak: { reason: 'checkpoint_signature_invalid', expected: `the log of workspace ${workspaceId}` },
    });
  });

  it('is BROKEN when the signed root is not the root over the bundle’s events', async () => {
    // A chain that verifies link by link, signed over other events: a fork.
    const fork = sealedChain(13).map((e) => ({ ...e, workspaceId }));
    const forked = { ...signedBundle(fork, key), events: events, head: bundleOf(events).head, from: bundleOf(events).from };
    const report = await both(forked);
    expect(report).toMatchObject({ verified: false, firstBreak: { reason: 'checkpoint_root_mismatch', sequence: 13 } });
    // A subtree before the bundle that is not the one signed over.
    const after = signedBundle(events, key, { after: 5 });
    after.checkpoint!.subtrees[0] = Buffer.alloc(32).toString('base64');
    expect(await both(after)).toMatchObject({ verified: false, firstBreak: { reason: 'checkpoint_root_mismatch' } });
  });

  it('is BROKEN when the checkpoint is not of the bundle’s head', async () => {
    expect(await both(signedBundle(events, key, { size: 11 }))).toMatchObject({
      verified: false,
      firstBreak: {
        reason: 'checkpoint_root_mismatch',
        expected: "a checkpoint of the bundle's head (tree size 13)",
        actual: 'one of tree size 11',
      },
    });
    const short = signedBundle(events, key);
    const cut = { ...short, events: short.events.slice(0, 10), head: bundleOf(events.slice(0, 10)).head };
    expect(await both(cut)).toMatchObject({ verified: false, firstBreak: { reason: 'checkpoint_beyond_head', sequence: 11 } });
  });

  it('says null without one, unless a key is pinned', async () => {
    const plain = bundleOf(events);
    expect(await both(plain)).toMatchObject({ verified: true });
    expect(verifyBundle(plain).checkpoint).toBeNull();
    expect(await both({ ...plain, checkpoint: null }, vkeyOf(key))).toMatchObject({
      verified: false,
      firstBreak: { reason: 'checkpoint_signature_invalid', actual: 'a bundle with no checkpoint' },
    });
  });
});
