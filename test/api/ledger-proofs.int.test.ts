/**
 * The signed tree over REST (GET /ledger/keys, /ledger/checkpoint, /ledger/proofs/inclusion and
 * /consistency, POST /ledger/cosignatures), checked as an outside verifier would: the checkpoint's
 * signature with the served vkey, its root over the events GET /events/stream serves, and the
 * proofs with RFC 9162's verifiers. Bad requests get the contract's errors and change nothing.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { leafHash, rootOfLeaves, verifyConsistency, verifyInclusion } from '@/server/ledger/merkle';
import {
  checkpointText,
  COSIGNATURE_ED25519,
  cosignatureLine,
  generateNoteKey,
  parseCheckpoint,
  parseNote,
  parseVkey,
  verifyNote,
  vkeyOf,
} from '@/server/ledger/note';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { integrate, nameWitness, signingSettings, writeWork } from '../support/ledger-tree';

let app: TestApp;
let settings: SigningSettings;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
  settings = signingSettings(app);
});
afterAll(async () => app?.close());

const b = (s: string) => Buffer.from(s, 'base64');

/** The leaf hashes of the events the API serves, as an outside verifier computes them. */
async function servedLeaves(ws: TestWorkspace): Promise<Buffer[]> {
  const leaves: Buffer[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await app.request('GET', `/events/stream?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key: ws.apiKey });
    expect(res.status).toBe(200);
    for (const e of res.body.data) leaves.push(leafHash(Buffer.from(e.eventHash.slice('sha256:'.length), 'hex')));
    cursor = res.body.meta.nextCursor;
    if (!res.body.meta.hasMore) return leaves;
  }
}

async function checkpoint(ws: TestWorkspace) {
  const res = await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { origin: string; tree_size: number; root_hash: string; note: string; cosignatures: Record<string, string>[] };
}

describe('the signed tree over REST', () => {
  it('serves a checkpoint signed by the listed key, over the root of the served events, and proofs that verify', async () => {
    const ws = await app.createWorkspace();
    expect((await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.error.code).toBe('not_found');
    await writeWork(app, ws, 5);
    await integrate(app, ws);

    const keys = await app.request('GET', '/ledger/keys', { key: ws.apiKey });
    expect(keys.status).toBe(200);
    expect(keys.body.data).toHaveLength(1);
    const key = keys.body.data[0];
    expect(key).toMatchObject({
      algorithm: 'ed25519',
      retired_at: null,
      name: `${new URL(settings.appUrl).host}/workspaces/${ws.workspaceId}`,
    });
    const verifier = parseVkey(key.vkey);
    expect(verifier.publicKey.toString('base64')).toBe(key.public_key);
    expect(
      createHash('sha256')
        .update(`${key.name}\n`)
        .update(Buffer.from([1]))
        .update(verifier.publicKey)
        .digest()
        .subarray(0, 4)
        .toString('hex'),
    ).toBe(key.key_id);

    const first = await checkpoint(ws);
    expect(verifyNote(first.note, verifier)).toBe(true);
    const body = parseCheckpoint(parseNote(first.note).text);
    expect(body).toEqual({ origin: first.origin, size: first.tree_size, root: b(first.root_hash) });
    const leaves = await servedLeaves(ws);
    expect(first.tree_size).toBe(leaves.length);
    expect(rootOfLeaves(leaves).equals(b(first.root_hash))).toBe(true);

    for (let sequence = 1; sequence <= first.tree_size; sequence++) {
      const res = await app.request('GET', `/ledger/proofs/inclusion?sequence=${sequence}`, { key: ws.apiKey });
      expect(res.status, res.text).toBe(200);
      const p = res.body.data;
      expect(p).toMatchObject({ sequence, tree_size: first.tree_size, leaf_index: sequence - 1 });
      expect(b(p.leaf_hash).equals(leaves[sequence - 1]!)).toBe(true);
      expect(verifyInclusion(p.leaf_index, p.tree_size, b(p.leaf_hash), p.inclusion_path.map(b), b(first.root_hash))).toBe(true);
    }

    await writeWork(app, ws, 4);
    await integrate(app, ws);
    const second = await checkpoint(ws);
    expect(second.tree_size).toBe(first.tree_size + 4);
    const res = await app.request('GET', `/ledger/proofs/consistency?from=${first.tree_size}`, { key: ws.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ from: first.tree_size, to: second.tree_size });
    expect(
      verifyConsistency(first.tree_size, second.tree_size, res.body.data.consistency_path.map(b), b(first.root_hash), b(second.root_hash)),
    ).toBe(true);
    // An inclusion proof in the earlier signed tree still verifies against the earlier root.
    const old = await app.request('GET', `/ledger/proofs/inclusion?sequence=2&tree_size=${first.tree_size}`, { key: ws.apiKey });
    expect(verifyInclusion(1, first.tree_size, b(old.body.data.leaf_hash), old.body.data.inclusion_path.map(b), b(first.root_hash))).toBe(
      true,
    );
  });

  it('refuses sizes past the newest checkpoint (400), other workspaces (404) and unknown parameters, changing nothing', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 2);
    await integrate(app, ws);
    const { tree_size } = await checkpoint(ws);
    const other = await app.createWorkspace();
    const cases: [string, number, string, string?][] = [
      [`/ledger/proofs/inclusion?sequence=1&tree_size=${tree_size + 1}`, 400, 'validation_failed', 'query.tree_size'],
      [`/ledger/proofs/inclusion?sequence=${tree_size + 1}`, 400, 'validation_failed', 'query.sequence'],
      ['/ledger/proofs/inclusion?sequence=0', 400, 'validation_failed'],
      ['/ledger/proofs/inclusion?sequence=abc', 400, 'validation_failed'],
      [`/ledger/proofs/consistency?from=1&to=${tree_size + 1}`, 400, 'validation_failed', 'query.to'],
      [`/ledger/proofs/consistency?from=${tree_size + 1}`, 400, 'validation_failed', 'query.from'],
      ['/ledger/proofs/consistency', 400, 'validation_failed'],
      [`/ledger/checkpoint?workspace_id=${other.workspaceId}`, 404, 'not_found'],
      [`/ledger/keys?workspace_id=${other.workspaceId}`, 404, 'not_found'],
      [`/ledger/proofs/inclusion?sequence=1&workspace_id=${other.workspaceId}`, 404, 'not_found'],
      ['/ledger/checkpoint?size=1', 400, 'unknown_field'],
    ];
    for (const [path, status, code, field] of cases) {
      await app.expectUnchanged(async () => {
        const res = await app.request('GET', path, { key: ws.apiKey });
        expect(res.status, `${path}: ${res.text}`).toBe(status);
        expect(res.body.error).toMatchObject({ code, requestId: expect.any(String), message: expect.any(String) });
        if (field) expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toContain(field);
      });
    }
    expect((await app.request('GET', '/ledger/checkpoint', { key: null })).status).toBe(401);
  });

  it('keeps a witness’s cosignature, serves it in the checkpoint’s note, and refuses one that does not verify', async () => {
    const ws = await app.createWorkspace();
    await writeWork(app, ws, 2);
    await integrate(app, ws);
    const cp = await checkpoint(ws);
    const text = parseNote(cp.note).text;
    const witness = generateNoteKey('witness.example/w1', COSIGNATURE_ED25519);
    const line = cosignatureLine(text, witness, 1_790_000_000);
    const post = (note: string, vkey = vkeyOf(witness)) =>
      app.request('POST', '/ledger/cosignatures', { key: ws.apiKey, body: { note, witness_vkey: vkey } });
    await nameWitness(app, ws, vkeyOf(witness));

    const kept = await post(cp.note + line);
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.data).toMatchObject({
      tree_size: cp.tree_size,
      witness: witness.name,
      recorded: true,
      signed_at: new Date(1_790_000_000_000).toISOString(),
    });
    const served = await checkpoint(ws);
    expect(served.note).toBe(cp.note + line);
    expect(served.cosignatures).toEqual([expect.objectContaining({ witness: witness.name, vkey: vkeyOf(witness) })]);
    const logVkey: string = (await app.request('GET', '/ledger/keys', { key: ws.apiKey })).body.data[0].vkey;
    expect(verifyNote(served.note, parseVkey(logVkey))).toBe(true);
    expect((await post(cp.note + line)).body.data.recorded).toBe(false);

    const stranger = generateNoteKey('witness.example/w1', COSIGNATURE_ED25519);
    const refusals: [string, string | undefined, number, string][] = [
      // Signed by another key than the one sent.
      [cp.note + cosignatureLine(text, stranger, 1_790_000_000), undefined, 400, 'validation_failed'],
      // A checkpoint of a size never signed.
      [`${checkpointText(cp.origin, cp.tree_size + 7, b(cp.root_hash))}\n${line}`, undefined, 404, 'not_found'],
      // The signed size with another root: not what the workspace signed.
      [
        (() => {
          const forged = checkpointText(cp.origin, cp.tree_size, Buffer.alloc(32, 9));
          return `${forged}\n${cosignatureLine(forged, witness, 1_790_000_000)}`;
        })(),
        undefined,
        409,
        'conflict',
      ],
      ['not a note', undefined, 400, 'validation_failed'],
      // The log's own key is not a witness key.
      [cp.note + line, logVkey, 400, 'validation_failed'],
    ];
    for (const [note, vkey, status, code] of refusals) {
      await app.expectUnchanged(async () => {
        const res = await post(note, vkey);
        expect(res.status, res.text).toBe(status);
        expect(res.body.error.code).toBe(code);
      });
    }
    expect((await checkpoint(ws)).cosignatures).toHaveLength(1);
  });
});
