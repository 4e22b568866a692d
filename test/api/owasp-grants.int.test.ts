/**
 * Grants in the OWASP API Security Top 10 (2023) sense: API1 (object level authorization) and API3
 * (object property level authorization, excessive data exposure). A grant is a bearer credential
 * for one action: it is shown, and used, only by the party it is for (its token's `azp`), on the
 * real REST transport. Everyone else reading the decision (another key of the workspace, its
 * approver, a viewer) sees the grant's id, digest, expiry and state, never its token, and another
 * key presenting a token it got anyway is 403 grant_not_yours with nothing used up.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { systemTrace } from '@/server/domain/actor';
import { startTestApp, type TestApp, type TestMember } from '../support/app';

let app: TestApp;
let approver: TestMember;
let viewer: TestMember;
let owner: TestMember;
/** Another key of the same workspace, owned by another person than the primary key's owner. */
let otherKey: { id: string; secret: string };
/** A key of `owner`'s own. */
let ownersKey: { id: string; secret: string };

const deploy = { tool: 'deploy', arguments: { service: 'api', version: '2.4.1' } };
const DIGEST = /^sha256:[0-9a-f]{64}$/;

async function keyOf(ownerUserId: string, name: string) {
  const actor = {
    type: 'system' as const,
    id: 'system:test',
    ownerId: ownerUserId,
    workspaceId: app.ws.workspaceId,
    trace: systemTrace(randomUUID()),
  };
  const key = await app.runtime.db.transaction((tx) => createApiKey(tx, actor, { name, ownerUserId }));
  return { id: key.id, secret: key.secret };
}

beforeAll(async () => {
  app = await startTestApp();
  [approver, viewer, owner] = await Promise.all([app.member('approver'), app.member('viewer'), app.member('owner')]);
  otherKey = await keyOf(approver.userId, 'another agent');
  ownersKey = await keyOf(owner.userId, 'the owner’s agent');
});
afterAll(async () => {
  await app?.close();
});

/** A decision with `deploy` raised by `by` (a key, or a session) and approved by the approver. */
async function approvedBy(by: { key?: string; session?: string }): Promise<string> {
  const raised = await app.request('POST', '/decisions', {
    ...by,
    body: { workspace_id: app.ws.workspaceId, title: 'Deploy 2.4.1?', action: deploy },
  });
  expect(raised.status, raised.text).toBe(201);
  const id: string = raised.body.decision.id;
  const res = await app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body: {} });
  expect(res.status, res.text).toBe(200);
  return id;
}

const read = (id: string, who: { key?: string; session?: string }) => app.request('GET', `/decisions/${id}`, who);

const consume = (token: string, key: string, actionDigest: string) =>
  app.request('POST', '/grants/consume', { key, body: { token, action_digest: actionDigest } });

describe('API1/API3: a grant’s token goes only to whom the grant is for', () => {
  it('is shown to the key that raised the decision, and to no other reader: they see its id, digest, expiry and state', async () => {
    const id = await approvedBy({ key: app.ws.apiKey });
    const mine = (await read(id, { key: app.ws.apiKey })).body.decision.grant;
    expect(mine.token).toEqual(expect.any(String));
    expect(decodeJwt(mine.token)).toMatchObject({ azp: app.ws.apiKeyId, jti: mine.id, wid: app.ws.workspaceId });

    const others = [{ key: otherKey.secret }, { session: viewer.session }, { session: approver.session }, { session: owner.session }];
    for (const who of others) {
      const res = await read(id, who);
      expect(res.status).toBe(200);
      expect(res.body.decision.grant).toEqual({
        id: mine.id,
        token: null,
        action_digest: expect.stringMatching(DIGEST),
        expires_at: mine.expires_at,
        consumed_at: null,
        voided_at: null,
      });
      expect(res.text).not.toContain(mine.token.split('.')[2]);
      // The list serves the same view.
      const list = await app.request('GET', '/decisions?limit=100', who);
      const listed = list.body.data.find((d: { id: string }) => d.id === id);
      expect(listed.grant).toMatchObject({ id: mine.id, token: null });
      expect(list.text).not.toContain(mine.token.split('.')[2]);
    }
  });

  it('presented by another key of the workspace: 403 grant_not_yours, nothing used up, and still usable by its own key', async () => {
    const id = await approvedBy({ key: app.ws.apiKey });
    const { token, action_digest } = (await read(id, { key: app.ws.apiKey })).body.decision.grant;
    // A key of the same owner as the raising key's is still another key.
    const sibling = await keyOf(app.ws.ownerUserId, 'a sibling key');
    await app.expectUnchanged(async () => {
      for (const digest of [action_digest, `sha256:${'0'.repeat(64)}`]) {
        const res = await consume(token, otherKey.secret, digest);
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'grant_not_yours', requestId: res.headers.get('x-request-id') });
        // Nothing of the grant's use or life is told to a key it is not for.
        expect(res.body.error.details).toEqual({ grant_id: decodeJwt(token).jti });
      }
      expect((await consume(token, sibling.secret, action_digest)).body.error.code).toBe('grant_not_yours');
    });
    const polled = (await read(id, { key: app.ws.apiKey })).body.decision.grant;
    expect(polled).toMatchObject({ consumed_at: null, voided_at: null });
    const used = await consume(token, app.ws.apiKey, action_digest);
    expect(used.status, used.text).toBe(200);
    // Once used, another key still learns nothing of it.
    expect((await consume(token, otherKey.secret, action_digest)).body.error.code).toBe('grant_not_yours');
  });

  it('raised by a person: the token is theirs (azp user:<id>), used by a key they own, refused to any other key', async () => {
    const id = await approvedBy({ session: owner.session });
    const theirs = (await read(id, { session: owner.session })).body.decision.grant;
    expect(decodeJwt(theirs.token)).toMatchObject({ azp: `user:${owner.userId}` });
    for (const who of [{ key: app.ws.apiKey }, { key: ownersKey.secret }, { session: approver.session }]) {
      expect((await read(id, who)).body.decision.grant).toMatchObject({ id: theirs.id, token: null });
    }
    await app.expectUnchanged(async () => {
      const res = await consume(theirs.token, app.ws.apiKey, theirs.action_digest);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('grant_not_yours');
    });
    expect((await consume(theirs.token, ownersKey.secret, theirs.action_digest)).status).toBe(200);
  });
});
