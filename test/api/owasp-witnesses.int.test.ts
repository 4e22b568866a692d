/**
 * The witnesses' surface (POST/GET/DELETE /ledger/witnesses, POST /ledger/cosignatures) against
 * the OWASP API Security Top 10 (2023), one named test per item that applies, on the real REST
 * transport. The finding behind it: any key could post cosignatures under self-made witness keys of
 * any name and time; 950 of them grew GET /ledger/checkpoint to 1.96 MB, past what a witness reads,
 * and witnessing stopped. Here 50 such posts are refused and the checkpoint does not grow.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WITNESSES_PER_WORKSPACE } from '@/server/domain/witnesses/witnesses';
import { COSIGNATURE_ED25519, cosignatureLine, generateNoteKey, parseNote, vkeyOf, type NoteKey } from '@/server/ledger/note';
import { startTestApp, type TestApp, type TestMember, type TestWorkspace } from '../support/app';
import { integrate, nameWitness, writeWork } from '../support/ledger-tree';

let app: TestApp;
let viewer: TestMember;
let approver: TestMember;
/** Another workspace, with a witness of its own. */
let other: TestWorkspace;
let theirWitness: string;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
  [viewer, approver] = await Promise.all([app.member('viewer'), app.member('approver')]);
  other = await app.createWorkspace();
  theirWitness = await nameWitness(app, other, vkeyOf(generateNoteKey('witness.example/theirs', COSIGNATURE_ED25519)));
});
afterAll(async () => app?.close());

const witnessKey = (name: string) => generateNoteKey(name, COSIGNATURE_ED25519);
const now = () => Math.floor(Date.now() / 1000);

async function signedWorkspace() {
  const ws = await app.createWorkspace();
  await writeWork(app, ws, 2);
  await integrate(app, ws);
  const cp = (await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data;
  return { ws, note: cp.note as string, text: parseNote(cp.note).text };
}

function cosign(ws: TestWorkspace, note: string, text: string, key: NoteKey, time: number) {
  return app.request('POST', '/ledger/cosignatures', {
    key: ws.apiKey,
    body: { note: note + cosignatureLine(text, key, time), witness_vkey: vkeyOf(key) },
  });
}

describe('OWASP API Security Top 10 (2023): witnesses', () => {
  it('API1:2023 Broken Object Level Authorization: another workspace’s witness is 404 to remove, its list 403 to name', async () => {
    await app.expectUnchanged(async () => {
      const del = await app.request('DELETE', `/ledger/witnesses/${theirWitness}`);
      expect(del.status).toBe(404);
      const missing = await app.request('DELETE', `/ledger/witnesses/${randomUUID()}`);
      expect(missing.status).toBe(404);
      // The answer is the one a missing id gets: it neither confirms nor names the witness.
      expect(del.body.error.message).toBe(missing.body.error.message);
      expect(del.text).not.toContain(theirWitness);
      for (const [method, path, body] of [
        ['GET', `/ledger/witnesses?workspace_id=${other.workspaceId}`, undefined],
        ['POST', '/ledger/witnesses', { workspace_id: other.workspaceId, vkey: vkeyOf(witnessKey('witness.example/mine')) }],
      ] as const) {
        const res = await app.request(method, path, { body });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.error.code).toBe('forbidden');
      }
    });
    expect((await app.request('GET', '/ledger/witnesses', { key: other.apiKey })).body.data).toHaveLength(1);
  });

  it('API2:2023 Broken Authentication: no key, or a made-up one, is 401 on every witness route', async () => {
    await app.expectUnchanged(async () => {
      for (const key of [null, `aws_${'x'.repeat(40)}`]) {
        for (const [method, path, body] of [
          ['GET', '/ledger/witnesses', undefined],
          ['POST', '/ledger/witnesses', { vkey: vkeyOf(witnessKey('witness.example/anon')) }],
          ['DELETE', `/ledger/witnesses/${theirWitness}`, undefined],
          ['POST', '/ledger/cosignatures', { note: 'x', witness_vkey: vkeyOf(witnessKey('witness.example/anon')) }],
        ] as const) {
          const res = await app.request(method, path, { key, body });
          expect(res.status, `${method} ${path}`).toBe(401);
          expect(res.body.error.code).toBe('unauthorized');
        }
      }
    });
  });

  it('API3:2023 Broken Object Property Level Authorization: a witness’s id, time or key id cannot be set by the caller', async () => {
    const vkey = vkeyOf(witnessKey('witness.example/props'));
    await app.expectUnchanged(async () => {
      for (const extra of [{ id: randomUUID() }, { named_at: '2000-01-01T00:00:00.000Z' }, { key_id: '00000000' }]) {
        const res = await app.request('POST', '/ledger/witnesses', { body: { vkey, ...extra } });
        expect(res.status, res.text).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'unknown_field', details: { fields: Object.keys(extra) } });
      }
    });
  });

  it('API4:2023 Unrestricted Resource Consumption: 50 self-made witnesses are refused and the checkpoint does not grow; a named one adds one line per size; at most 20 are named', async () => {
    const { ws, note, text } = await signedWorkspace();
    const before = await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey });
    await app.expectUnchanged(async () => {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => cosign(ws, note, text, witnessKey(`sigsum.org/v1/witness/impersonated-${i}`), 0)),
      );
      for (const res of answers) {
        expect(res.status, res.text).toBe(403);
        expect(res.body.error.code).toBe('witness_not_named');
      }
    });
    const after = await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey });
    expect(after.text.length).toBe(before.text.length);
    expect(after.body.data.cosignatures).toEqual([]);

    // A named witness sending 50 cosignatures of one size leaves one line: the newest.
    const honest = witnessKey('witness.example/honest');
    await nameWitness(app, ws, vkeyOf(honest));
    const t = now() - 1000;
    for (let i = 0; i < 50; i++) expect((await cosign(ws, note, text, honest, t + i)).status).toBe(200);
    const served = (await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data;
    expect(served.note).toBe(note + cosignatureLine(text, honest, t + 49));
    expect(served.cosignatures).toHaveLength(1);

    // The list of named witnesses, and so the lines a checkpoint carries, has a ceiling.
    for (let i = 1; i < MAX_WITNESSES_PER_WORKSPACE; i++) await nameWitness(app, ws, vkeyOf(witnessKey(`witness.example/w${i}`)));
    await app.expectUnchanged(async () => {
      const over = await app.request('POST', '/ledger/witnesses', {
        key: ws.apiKey,
        body: { vkey: vkeyOf(witnessKey('witness.example/one-more')) },
      });
      expect(over.status).toBe(409);
      expect(over.body.error.code).toBe('conflict');
      expect(over.body.error.message).toContain(`at most ${MAX_WITNESSES_PER_WORKSPACE} witnesses`);
    });
  });

  it('API5:2023 Broken Function Level Authorization: viewers and approvers cannot name or remove witnesses', async () => {
    const mine = await nameWitness(app, app.ws, vkeyOf(witnessKey('witness.example/ours')));
    await app.expectUnchanged(async () => {
      for (const who of [viewer, approver]) {
        const post = await app.request('POST', '/ledger/witnesses', {
          session: who.session,
          body: { vkey: vkeyOf(witnessKey('witness.example/by-a-viewer')) },
        });
        expect(post.status).toBe(403);
        expect(post.body.error.message).toMatch(/cannot do this/);
        const del = await app.request('DELETE', `/ledger/witnesses/${mine}`, { session: who.session });
        expect(del.status).toBe(403);
      }
    });
  });

  it('API8:2023 Security Misconfiguration: hostile names, keys and times are 400 with the contract’s error, never a 500', async () => {
    const { ws, note, text } = await signedWorkspace();
    const named = witnessKey('witness.example/times');
    await nameWitness(app, ws, vkeyOf(named));
    await app.expectUnchanged(async () => {
      for (const time of [9_007_199_254_740_991, now() + 601, 2 ** 53 - 1]) {
        const res = await cosign(ws, note, text, named, time);
        expect(res.status, res.text).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'validation_failed', requestId: expect.any(String) });
      }
      for (const vkey of [
        vkeyOf(witnessKey(`w${'x'.repeat(200)}`)),
        vkeyOf(witnessKey('witness\u0000nul')),
        vkeyOf(generateNoteKey('log.example/not-a-witness', 0x01)),
        `${'+'.repeat(500)}`,
        'sigsum.org/v1/witness/impersonated+deadbeef+' + 'A'.repeat(44),
      ]) {
        const res = await app.request('POST', '/ledger/witnesses', { key: ws.apiKey, body: { vkey } });
        expect(res.status, res.text).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
      }
    });
  });
});
