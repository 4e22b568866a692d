/**
 * Passkeys and rulings they sign: a member adds a passkey (its public key reaches the ledger as
 * SubjectPublicKeyInfo), a require_passkey decision is approved only with an assertion over the
 * ruling's statement, and the approval event verifies offline with node:crypto and canonicalize
 * alone (no WebAuthn library). A software authenticator (test/support/soft-authenticator.ts)
 * answers the challenges; the approval goes through the served API.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { SoftAuthenticator } from '../support/soft-authenticator';
import { inArray } from 'drizzle-orm';
import { users } from '@/db/schema';
import { hashPassword } from '@/server/auth/passwords';
import { checkPasskeySignIn, signInOptions } from '@/server/domain/passkeys/sign-in';
import { relyingParty } from '@/server/domain/passkeys/relying-party';

let app: TestApp;
let trpc: (req: Request) => Promise<Response>;
let approver: TestMember;
let owner: TestMember;
let device: SoftAuthenticator;
const ORIGIN = 'http://localhost:3000';
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  app = await startTestApp({ APP_URL: ORIGIN });
  trpc = createInternalTrpcHandler(async () => app.runtime);
  approver = await app.member('approver');
  owner = await app.member('owner');
  // Adding a passkey asks for the password: these two have a real one.
  const hash = await hashPassword(PASSWORD);
  await app.runtime.db
    .update(users)
    .set({ passwordHash: hash })
    .where(inArray(users.id, [approver.userId, owner.userId]));
  device = new SoftAuthenticator('localhost', ORIGIN);
});
afterAll(async () => {
  await app?.close();
});

async function mutate(path: string, input: unknown, who: TestMember) {
  const headers = new Headers({ 'content-type': 'application/json', cookie: `next-auth.session-token=${who.session}`, origin: ORIGIN });
  const res = await trpc(new Request(`${ORIGIN}/api/trpc/${path}`, { method: 'POST', headers, body: JSON.stringify(input) }));
  const body = (await res.json()) as { result?: { data: any }; error?: { data?: { appCode?: string } } };
  return { status: res.status, data: body.result?.data, code: body.error?.data?.appCode };
}

const b64urlSha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

async function events(type: string) {
  const page = await app.request('GET', `/events/stream?limit=100&type=${type}`);
  return page.body.data as { aggregateId: string; actorId: string; payload: any }[];
}

async function addPasskey(who: TestMember, authenticator: SoftAuthenticator) {
  const options = await mutate('account.passkeyOptions', {}, who);
  expect(options.status).toBe(200);
  const added = await mutate(
    'account.addPasskey',
    { challenge_id: options.data.challenge_id, response: authenticator.register(options.data.options), current_password: PASSWORD },
    who,
  );
  expect(added.status).toBe(200);
  return added.data as { id: string };
}

const raise = (body: Record<string, unknown>) =>
  app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'Wire 40,000 EUR?', ...body } });

const approve = (id: string, body: Record<string, unknown> = {}) =>
  app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body, origin: ORIGIN });

describe('passkeys', () => {
  it('a member adds one: its public key reaches the ledger as SubjectPublicKeyInfo', async () => {
    const added = await addPasskey(approver, device);
    const [registered] = (await events('passkey.registered')).filter((e) => e.aggregateId === added.id);
    expect(registered).toMatchObject({
      actorId: approver.userId,
      payload: { user_id: approver.userId, credential_id: device.id, algorithm: -7 },
    });
    const spki = createPublicKey({ key: Buffer.from(registered!.payload.public_key_spki, 'base64'), format: 'der', type: 'spki' });
    expect(spki.asymmetricKeyType).toBe('ec');
    // A challenge is taken once: the same answer again is refused.
    const options = await mutate('account.passkeyOptions', {}, approver);
    const other = new SoftAuthenticator('localhost', ORIGIN);
    const answer = other.register(options.data.options);
    // Not without the password: a stolen session must not add a passkey that outlives it.
    const withoutIt = await mutate(
      'account.addPasskey',
      { challenge_id: options.data.challenge_id, response: answer, current_password: 'not the password at all' },
      approver,
    );
    expect(withoutIt.code).toBe('validation_failed');
    const second = await mutate(
      'account.addPasskey',
      { challenge_id: options.data.challenge_id, response: answer, current_password: PASSWORD },
      approver,
    );
    expect(second.status).toBe(200);
    const again = await mutate(
      'account.addPasskey',
      { challenge_id: options.data.challenge_id, response: answer, current_password: PASSWORD },
      approver,
    );
    expect(again.code).toBe('validation_failed');
    // Removed, it signs nothing, and the ledger says so.
    expect((await mutate('account.removePasskey', { id: second.data.id }, approver)).data).toEqual({ removed: true });
    expect((await events('passkey.removed')).map((e) => e.payload.credential_id)).toContain(other.id);
    const rp = relyingParty(ORIGIN);
    expect(
      await checkPasskeySignIn(
        app.runtime.db,
        app.runtime.secrets.auth,
        other.assert(await signInOptions(app.runtime.secrets.auth, rp)),
        rp,
      ),
    ).toBeNull();
  });

  it('a require_passkey decision is refused without the assertion (403 passkey_required), changing nothing', async () => {
    const d = (await raise({ require_passkey: true })).body.decision;
    expect(d.require_passkey).toBe(true);
    await app.expectUnchanged(async () => {
      const res = await approve(d.id, {});
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('passkey_required');
    });
  });

  it('is approved with the approver’s assertion over the statement, which anyone can check offline', async () => {
    const action = { tool: 'wire_transfer', arguments: { iban: 'DE89370400440532013000', amount_eur: 40000 } };
    const d = (await raise({ require_passkey: true, action })).body.decision;
    const challenge = await mutate('decisions.passkeyChallenge', { id: d.id }, approver);
    expect(challenge.status).toBe(200);
    expect(challenge.data.statement).toMatchObject({
      decision_id: d.id,
      outcome: 'approved',
      option_id: 'approve',
      option_ids: ['approve'],
      action_digest: d.action_digest,
      approver_id: approver.userId,
    });
    const response = device.assert(challenge.data.options);
    const res = await approve(d.id, { passkey: { challenge_id: challenge.data.challenge_id, response } });
    expect(res.status).toBe(200);
    // The token, read by the key that raised the decision (its approver is shown none).
    const polled = await app.request('GET', `/decisions/${d.id}`);
    const claims = JSON.parse(Buffer.from(polled.body.decision.grant.token.split('.')[1], 'base64url').toString());
    expect(claims.apr).toEqual({ type: 'human', id: approver.userId, passkey: true });

    // Offline, from the ledger alone: the approval's proof and the passkey's registration.
    const approval = (await events('decision.approved')).find((e) => e.aggregateId === d.id)!;
    const proof = approval.payload.passkey;
    const registration = (await events('passkey.registered')).find((e) => e.payload.credential_id === proof.credential_id)!;
    const clientData = JSON.parse(Buffer.from(proof.client_data_json, 'base64url').toString());
    expect(clientData).toMatchObject({ type: 'webauthn.get', origin: ORIGIN, challenge: b64urlSha256(canonicalize(proof.statement)!) });
    expect(proof.statement).toMatchObject({ decision_id: d.id, action_digest: d.action_digest, approver_id: approver.userId });
    const authData = Buffer.from(proof.authenticator_data, 'base64url');
    expect(authData.subarray(0, 32)).toEqual(createHash('sha256').update('localhost').digest());
    const signed = Buffer.concat([authData, createHash('sha256').update(Buffer.from(proof.client_data_json, 'base64url')).digest()]);
    const key = createPublicKey({ key: Buffer.from(registration.payload.public_key_spki, 'base64'), format: 'der', type: 'spki' });
    expect(verify('sha256', signed, key, Buffer.from(proof.signature, 'base64url'))).toBe(true);
    // And a statement changed by one field does not verify against it.
    const forged = { ...proof.statement, action_digest: `sha256:${'0'.repeat(64)}` };
    expect(b64urlSha256(canonicalize(forged)!)).not.toBe(clientData.challenge);
  });

  it('refuses an assertion for another ruling, a replayed one, one from another origin, and someone else’s passkey', async () => {
    const d = (
      await raise({
        require_passkey: true,
        shape_context: {
          options: [
            { id: 'a', label: 'A' },
            { id: 'b', label: 'B' },
          ],
        },
      })
    ).body.decision;
    const forA = await mutate('decisions.passkeyChallenge', { id: d.id, option_ids: ['a'] }, approver);
    const forB = await mutate('decisions.passkeyChallenge', { id: d.id, option_ids: ['b'] }, approver);
    const foreign = await mutate('decisions.passkeyChallenge', { id: d.id, option_ids: ['a'] }, approver);
    const ownerDevice = new SoftAuthenticator('localhost', ORIGIN);
    await addPasskey(owner, ownerDevice);
    await app.expectUnchanged(async () => {
      // Signed for option a, sent to approve b.
      const other = await approve(d.id, {
        option_ids: ['b'],
        passkey: { challenge_id: forA.data.challenge_id, response: device.assert(forA.data.options) },
      });
      expect(other.status).toBe(400);
      expect(other.body.error.message).toContain('signed another ruling');
      // Another origin's page asked for it.
      const phished = await approve(d.id, {
        option_ids: ['b'],
        passkey: { challenge_id: forB.data.challenge_id, response: device.assert(forB.data.options, { origin: 'http://evil.test' }) },
      });
      expect(phished.status).toBe(400);
      expect(phished.body.error.message).toMatch(/does not verify.*origin/i);
      // The owner's passkey on the approver's challenge.
      const theirs = await approve(d.id, {
        option_ids: ['a'],
        passkey: { challenge_id: foreign.data.challenge_id, response: ownerDevice.assert(foreign.data.options) },
      });
      expect(theirs.status).toBe(400);
      expect(theirs.body.error.message).toContain('not one of yours');
    });
    // A refused approval changed nothing, its challenge included; the right answer goes through, once.
    const fresh = await mutate('decisions.passkeyChallenge', { id: d.id, option_ids: ['b'] }, approver);
    const answer = { challenge_id: fresh.data.challenge_id, response: device.assert(fresh.data.options) };
    expect((await approve(d.id, { option_ids: ['b'], passkey: answer })).status).toBe(200);
    expect((await approve(d.id, { option_ids: ['b'], passkey: answer })).status).toBe(409);
  });

  it('the workspace requires passkeys for chosen urgencies; its owner sets them, and the change is in the ledger', async () => {
    const set = await mutate('workspaces.changeSettings', { workspace_id: app.ws.workspaceId, passkey_urgencies: ['critical'] }, owner);
    expect(set.data).toEqual({ passkey_urgencies: ['critical'], artifact_content_days: null });
    const byApprover = await mutate('workspaces.changeSettings', { workspace_id: app.ws.workspaceId, passkey_urgencies: [] }, approver);
    expect(byApprover.code).toBe('forbidden');
    expect((await raise({ urgency: 'critical' })).body.decision.require_passkey).toBe(true);
    expect((await raise({ urgency: 'urgent' })).body.decision.require_passkey).toBe(false);
    const changed = await events('workspace.settings_changed');
    expect(changed.at(-1)?.payload).toEqual({
      passkey_urgencies: ['critical'],
      previous_passkey_urgencies: [],
      artifact_content_days: null,
      previous_artifact_content_days: null,
    });
    await mutate('workspaces.changeSettings', { workspace_id: app.ws.workspaceId, passkey_urgencies: [] }, owner);
  });

  it('signs its person in, once per challenge, and only with a challenge this instance made', async () => {
    const rp = relyingParty(ORIGIN);
    const secret = app.runtime.secrets.auth;
    const options = await signInOptions(secret, rp);
    const answer = device.assert(options);
    expect(await checkPasskeySignIn(app.runtime.db, secret, answer, rp)).toMatchObject({ id: approver.userId, email: approver.email });
    // The same answer again: its challenge was taken.
    expect(await checkPasskeySignIn(app.runtime.db, secret, answer, rp)).toBeNull();
    // A challenge made under another secret, or by no one.
    const foreign = await signInOptions('another-secret', rp);
    expect(await checkPasskeySignIn(app.runtime.db, secret, device.assert(foreign), rp)).toBeNull();
    expect(
      await checkPasskeySignIn(app.runtime.db, secret, device.assert({ challenge: Buffer.alloc(40).toString('base64url') }), rp),
    ).toBeNull();
    // An unknown passkey.
    const stranger = new SoftAuthenticator('localhost', ORIGIN);
    expect(await checkPasskeySignIn(app.runtime.db, secret, stranger.assert(await signInOptions(secret, rp)), rp)).toBeNull();
  });
});
