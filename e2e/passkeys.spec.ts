/**
 * A passkey signs a ruling and signs its person in, in Chromium with its virtual authenticator (CDP
 * WebAuthn.addVirtualAuthenticator): the demo owner adds a passkey at /settings/account, then
 * approves a require_passkey decision; the approval event's assertion verifies offline with the
 * registered public_key_spki and the statement's digest (node:crypto, canonicalize), and a ruling
 * without an assertion is refused. WebAuthn needs a name for its relying party, never an IP
 * address, so this runs against its own `npm start`, reached at http://localhost:<port>.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import canonicalize from 'canonicalize';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { npmStart, signInAt, stopStarted, type Started } from './npm-start';

let s: Started | undefined;
let dir: string;
test.beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aws-passkeys-'));
  s = await npmStart(path.join(dir, 'pglite'));
});
test.afterAll(async () => {
  await stopStarted(s);
  rmSync(dir, { recursive: true, force: true });
});

async function api(request: APIRequestContext, method: 'GET' | 'POST', url: string, data?: unknown) {
  const res = await request.fetch(`${s!.url}/api/v1${url}`, {
    method,
    headers: { Authorization: `Bearer ${s!.apiKey}`, ...(data ? { 'Content-Type': 'application/json' } : {}) },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  return { status: res.status(), body: await res.json() };
}

test('a member adds a passkey, approves a require_passkey decision with it (the assertion verifies offline), and signs in with it', async ({
  browser,
  request,
}) => {
  test.setTimeout(120_000);
  expect(s!.url).toMatch(/^http:\/\/localhost:\d+$/);
  const action = { tool: 'delete_dataset', arguments: { dataset: 'customers-2019', backup: true } };
  const raised = await api(request, 'POST', '/decisions', {
    workspace_id: s!.workspaceId,
    title: 'Delete the 2019 customer dataset?',
    action,
    require_passkey: true,
  });
  expect(raised.status).toBe(201);
  const id: string = raised.body.decision.id;

  const { context, page } = await signInAt(browser, s!.url, s!);
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });

  // Without the passkey, the approval is refused.
  const unsigned = await page.request.post(`/api/v1/decisions/${id}/approve`, { data: {}, headers: { origin: s!.url } });
  expect(unsigned.status()).toBe(403);
  expect((await unsigned.json()).error.code).toBe('passkey_required');

  await page.goto('/settings/account');
  await page.getByLabel('Your password, to add a passkey').fill(s!.owner.password);
  await page.getByRole('button', { name: 'Add a passkey' }).click();
  await expect(page.getByText('Passkey added.')).toBeVisible();
  await expect(page.getByRole('table', { name: 'Your passkeys' })).toContainText('Passkey 1');

  await page.goto(`/decisions/${id}`);
  await expect(page.getByText('passkey to approve')).toBeVisible();
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await expect(page.getByText('Sign with your passkey and approve')).toBeVisible();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');

  // Signed out, the same passkey signs the owner in again, with no email or password typed.
  await context.clearCookies();
  await page.goto('/signin');
  await page.getByRole('button', { name: 'Use a passkey' }).click();
  await expect(page).toHaveURL(`${s!.url}/decisions`);
  await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  await context.close();

  // Offline, from the ledger alone.
  const events = (await api(request, 'GET', '/events/stream?limit=100&type=decision.approved&type=passkey.registered')).body.data as {
    eventType: string;
    aggregateId: string;
    payload: any;
  }[];
  const proof = events.find((e) => e.eventType === 'decision.approved' && e.aggregateId === id)!.payload.passkey;
  const registered = events.find((e) => e.eventType === 'passkey.registered' && e.payload.credential_id === proof.credential_id)!;
  expect(proof.statement).toMatchObject({ decision_id: id, outcome: 'approved', action_digest: raised.body.decision.action_digest });
  const clientDataJson = Buffer.from(proof.client_data_json, 'base64url');
  const clientData = JSON.parse(clientDataJson.toString());
  expect(clientData.type).toBe('webauthn.get');
  expect(clientData.origin).toBe(s!.url);
  expect(clientData.challenge).toBe(createHash('sha256').update(canonicalize(proof.statement)!).digest('base64url'));
  const signed = Buffer.concat([Buffer.from(proof.authenticator_data, 'base64url'), createHash('sha256').update(clientDataJson).digest()]);
  const key = createPublicKey({ key: Buffer.from(registered.payload.public_key_spki, 'base64'), format: 'der', type: 'spki' });
  expect(verify('sha256', signed, key, Buffer.from(proof.signature, 'base64url'))).toBe(true);

  const polled = (await api(request, 'GET', `/decisions/${id}`)).body.decision;
  const claims = JSON.parse(Buffer.from(polled.grant.token.split('.')[1], 'base64url').toString());
  expect(claims.apr).toMatchObject({ type: 'human', passkey: true });
});
