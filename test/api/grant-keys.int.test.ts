/**
 * The keys a workspace signs with, through the served API on both engines: grants are signed with
 * a grant key of their own, which verifies with jose and the served JWKS alone and is none of the
 * checkpoint keys GET /ledger/keys lists; a rotation of either key leaves the grants and the
 * checkpoints signed before it verifiable; the grants signed with a checkpoint key before grants
 * had keys of their own keep verifying (as the migration that made the grant keys leaves them); and
 * no private key is stored in the clear.
 */
import { readFileSync } from 'node:fs';
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import canonicalize from 'canonicalize';
import { sql } from 'drizzle-orm';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { workspaceJwks } from '@/server/domain/grants/jwks';
import { rotateGrantKey } from '@/server/keys/grant-keys';
import { openSeed } from '@/server/keys/workspace-keys';
import { addSigningKey, newestCheckpoint } from '@/server/ledger/checkpoints';
import { parseVkey, verifyNote } from '@/server/ledger/note';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { integrate, signingSettings, writeWork } from '../support/ledger-tree';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
});
afterAll(async () => app?.close());

const digest = (value: unknown) => `sha256:${createHash('sha256').update(canonicalize(value)!).digest('hex')}`;
const deploy = { tool: 'deploy', arguments: { service: 'api', version: '2.4.1' } };

/** A workspace of its own, with an approver. */
async function workspace() {
  const ws = await app.createWorkspace();
  const approver = await app.member('approver', ws.workspaceId);
  return { ws, approver };
}

/** A decision with `deploy` raised in `ws` and approved: its grant. */
async function grantIn({
  ws,
  approver,
}: Awaited<ReturnType<typeof workspace>>): Promise<{ decisionId: string; id: string; token: string }> {
  const raised = await app.request('POST', '/decisions', {
    key: ws.apiKey,
    body: { workspace_id: ws.workspaceId, title: 'Deploy?', action: deploy },
  });
  expect(raised.status, raised.text).toBe(201);
  const res = await app.request('POST', `/decisions/${raised.body.decision.id}/approve`, { session: approver.session, body: {} });
  expect(res.status, res.text).toBe(200);
  // The token is shown to the key that raised the decision, not to its approver.
  const polled = await app.request('GET', `/decisions/${raised.body.decision.id}`, { key: ws.apiKey });
  return { decisionId: raised.body.decision.id, ...polled.body.decision.grant };
}

async function jwksOf(ws: TestWorkspace): Promise<JSONWebKeySet> {
  const res = await app.request('GET', `/workspaces/${ws.workspaceId}/jwks.json`, { key: null });
  expect(res.status).toBe(200);
  return res.body;
}

async function ledgerKeysOf(ws: TestWorkspace): Promise<{ key_id: string; vkey: string }[]> {
  const res = await app.request('GET', '/ledger/keys', { key: ws.apiKey });
  expect(res.status).toBe(200);
  return res.body.data;
}

/** Verifies `token` as a tool server would: jose and the JWKS, nothing of the service's. */
const verifyWith = (jwks: JSONWebKeySet, token: string) =>
  jwtVerify(token, createLocalJWKSet(jwks), { algorithms: ['EdDSA'], typ: 'grant+jwt' });

describe('the grant key', () => {
  it('signs grants that verify with jose and the JWKS alone, and is none of the checkpoint keys', async () => {
    const w = await workspace();
    const grant = await grantIn(w);
    await writeWork(app, w.ws, 2);
    await integrate(app, w.ws);
    const jwks = await jwksOf(w.ws);
    const ledgerKeys = await ledgerKeysOf(w.ws);
    expect(jwks.keys).toHaveLength(1);
    expect(ledgerKeys).toHaveLength(1);

    const { payload, protectedHeader } = await verifyWith(jwks, grant.token);
    expect(payload).toMatchObject({ jti: grant.id, wid: w.ws.workspaceId, act: digest(deploy) });
    // compactVerify with the one key the header names, imported from the JWKS: the same bytes verify.
    const [jwk] = jwks.keys;
    const { protectedHeader: header } = await compactVerify(grant.token, createLocalJWKSet({ keys: [jwk!] }));
    expect(header).toEqual({ alg: 'EdDSA', kid: jwk!.kid, typ: 'grant+jwt' });

    // Its kid is the key's RFC 7638 thumbprint, and no key of the JWKS is a checkpoint key, by id or by bytes.
    expect(protectedHeader.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const kids = new Set(jwks.keys.map((k) => k.kid));
    for (const k of ledgerKeys) expect(kids.has(k.key_id)).toBe(false);
    const checkpointPublic = new Set(ledgerKeys.map((k) => parseVkey(k.vkey).publicKey.toString('base64url')));
    for (const k of jwks.keys) expect(checkpointPublic.has(k.x!)).toBe(false);
  });

  it('rotated: grants issued before still verify with the JWKS, are shown the same, and are consumed', async () => {
    const w = await workspace();
    const before = await grantIn(w);
    const { kid, replaces } = await app.runtime.db.transaction((tx) => rotateGrantKey(tx, w.ws.workspaceId, signingSettings(app)));
    expect(replaces).toBe(decodeProtectedHeader(before.token).kid);
    const after = await grantIn(w);
    expect(decodeProtectedHeader(after.token).kid).toBe(kid);
    expect(kid).not.toBe(replaces);

    const jwks = await jwksOf(w.ws);
    expect(jwks.keys.map((k) => k.kid)).toEqual([replaces, kid]);
    expect((await verifyWith(jwks, before.token)).payload.jti).toBe(before.id);
    expect((await verifyWith(jwks, after.token)).payload.jti).toBe(after.id);
    const shown = await app.request('GET', `/decisions/${before.decisionId}`, { key: w.ws.apiKey });
    expect(shown.body.decision.grant.token).toBe(before.token);
    const used = await app.request('POST', '/grants/consume', {
      key: w.ws.apiKey,
      body: { token: before.token, action_digest: digest(deploy) },
    });
    expect(used.status, used.text).toBe(200);

    // The retired key is served as long as a grant it signed may live, and not after.
    const later = await workspaceJwks(app.runtime.db, w.ws.workspaceId, new Date(Date.now() + 86_401_000));
    expect(later.keys.map((k) => k.kid)).toEqual([kid]);
  });

  it('a checkpoint key rotation leaves old checkpoints verifiable with the listed keys, and the grants as they were', async () => {
    const w = await workspace();
    const grant = await grantIn(w);
    await integrate(app, w.ws);
    const first = (await newestCheckpoint(app.runtime.db, w.ws.workspaceId))!;
    await app.runtime.db.transaction((tx) => addSigningKey(tx, w.ws.workspaceId, signingSettings(app)));
    await writeWork(app, w.ws, 1);
    await integrate(app, w.ws);
    const second = (await newestCheckpoint(app.runtime.db, w.ws.workspaceId))!;
    expect(second.keyId).not.toBe(first.keyId);

    const listed = await ledgerKeysOf(w.ws);
    expect(listed.map((k) => k.key_id)).toEqual([first.keyId, second.keyId]);
    const byId = new Map(listed.map((k) => [k.key_id, parseVkey(k.vkey)]));
    expect(verifyNote(first.note, byId.get(first.keyId)!)).toBe(true);
    expect(verifyNote(second.note, byId.get(second.keyId)!)).toBe(true);
    const jwks = await jwksOf(w.ws);
    expect(jwks.keys).toHaveLength(1);
    expect((await verifyWith(jwks, grant.token)).payload.jti).toBe(grant.id);
    for (const k of listed) expect(jwks.keys.some((j) => j.kid === k.key_id)).toBe(false);
  });
});

describe('a grant signed with a checkpoint key before grants had keys of their own', () => {
  /** The statement of the migration that made the grant keys which copies the checkpoint keys that signed grants. */
  const copyStatement = readFileSync(new URL('../../drizzle/0035_grant_signing_keys.sql', import.meta.url), 'utf8')
    .split('--> statement-breakpoint')
    .find((s) => s.includes('INSERT INTO "grant_signing_keys"'))!;

  it('keeps its token, verifies with the JWKS while it may live, and is consumed', async () => {
    const w = await workspace();
    await integrate(app, w.ws);
    const [checkpointKey] = await ledgerKeysOf(w.ws);
    // As the database stood before the migration: a grant whose key is the checkpoint key, and no grant keys.
    const grant = await grantIn(w);
    await query(app.runtime.db, sql`delete from grant_signing_keys where workspace_id = ${w.ws.workspaceId}`);
    await query(app.runtime.db, sql`update decision_grants set key_id = ${checkpointKey!.key_id} where id = ${grant.id}`);
    await query(app.runtime.db, sql.raw(copyStatement));

    const shown = await app.request('GET', `/decisions/${grant.decisionId}`, { key: w.ws.apiKey });
    const token: string = shown.body.decision.grant.token;
    expect(decodeProtectedHeader(token).kid).toBe(checkpointKey!.key_id);
    const jwks = await jwksOf(w.ws);
    expect(jwks.keys.map((k) => k.kid)).toEqual([checkpointKey!.key_id]);
    expect((await verifyWith(jwks, token)).payload.jti).toBe(grant.id);

    // The next grant gets the workspace a grant key of its own; the old one is gone from the JWKS
    // once no grant it signed may still live.
    const next = await grantIn(w);
    const kid = decodeProtectedHeader(next.token).kid!;
    expect(kid).not.toBe(checkpointKey!.key_id);
    expect((await verifyWith(await jwksOf(w.ws), next.token)).payload.jti).toBe(next.id);
    const later = await workspaceJwks(app.runtime.db, w.ws.workspaceId, new Date(Date.now() + 86_401_000));
    expect(later.keys.map((k) => k.kid)).toEqual([kid]);

    const used = await app.request('POST', '/grants/consume', { key: w.ws.apiKey, body: { token, action_digest: digest(deploy) } });
    expect(used.status, used.text).toBe(200);
  });
});

describe('the private keys at rest', () => {
  it('are sealed: no seed is stored in the clear, and each opens to the key its public half names', async () => {
    const w = await workspace();
    await grantIn(w);
    await integrate(app, w.ws);
    const rows = await query<{ public_key: Uint8Array; private_key_cipher: string }>(
      app.runtime.db,
      sql`select public_key, private_key_cipher from grant_signing_keys where workspace_id = ${w.ws.workspaceId}
          union all
          select public_key, private_key_cipher from ledger_signing_keys where workspace_id = ${w.ws.workspaceId}`,
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      const seed = openSeed(signingSettings(app), row.private_key_cipher);
      expect(seed).toHaveLength(32);
      for (const form of ['base64', 'base64url', 'hex'] as const) expect(row.private_key_cipher).not.toContain(seed.toString(form));
      const privateKey = createPrivateKey({
        key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
        format: 'der',
        type: 'pkcs8',
      });
      const publicKey = createPublicKey(privateKey).export({ format: 'jwk' }).x;
      expect(publicKey).toBe(Buffer.from(row.public_key).toString('base64url'));
      expect(() => openSeed({ ...signingSettings(app), secret: 'another instance secret, long enough' }, row.private_key_cipher)).toThrow();
    }
  });
});
