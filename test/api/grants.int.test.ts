/**
 * Rulings that bind: the action under decision and its digest, the grant an approval issues (a
 * JWS that verifies with the workspace's JWKS alone), and its single use (POST /grants/consume),
 * through the served API. The digests and the token are checked with libraries of their own
 * (canonicalize, jose), never with the service's code.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { startTestApp, type TestApp, type TestMember } from '../support/app';

let app: TestApp;
let approver: TestMember;
beforeAll(async () => {
  app = await startTestApp();
  approver = await app.member('approver');
});
afterAll(async () => {
  await app?.close();
});

const digest = (value: unknown) => `sha256:${createHash('sha256').update(canonicalize(value)!).digest('hex')}`;

async function newTask(): Promise<{ id: string; version: number; receiptId: string }> {
  const res = await app.request('POST', '/work', { body: { title: 'Ship the fix' } });
  expect(res.status).toBe(201);
  return { id: res.body.data.taskId, version: res.body.data.aggregateVersion, receiptId: res.body.data.receiptId };
}

async function taskVersion(id: string): Promise<number> {
  const res = await app.request('GET', `/tasks/${id}`);
  return Number(JSON.parse(res.headers.get('etag')!));
}

async function raise(body: Record<string, unknown>) {
  return app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'Run this?', ...body } });
}

const approve = (id: string, body: Record<string, unknown> = {}) =>
  app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body });

const consume = (token: string, actionDigest: string, key?: string) =>
  app.request('POST', '/grants/consume', { key, body: { token, action_digest: actionDigest } });

/**
 * A decision with `action`, raised and approved: the decision as the key that raised it reads it
 * then (the approver is shown the grant without its token).
 */
async function approved(action: Record<string, unknown>, extra: Record<string, unknown> = {}, ruling: Record<string, unknown> = {}) {
  const raised = await raise({ action, ...extra });
  expect(raised.status).toBe(201);
  const res = await approve(raised.body.decision.id, ruling);
  expect(res.status).toBe(200);
  expect(res.body.decision.grant).toMatchObject({ token: null });
  return (await app.request('GET', `/decisions/${raised.body.decision.id}`)).body.decision;
}

async function grantEvents(grantId: string) {
  const page = await app.request('GET', '/events/stream?limit=100&type=grant.issued&type=grant.consumed&type=grant.refused');
  return (page.body.data as { aggregateId: string; eventType: string; payload: Record<string, unknown> }[]).filter(
    (e) => e.aggregateId === grantId,
  );
}

const deploy = { tool: 'deploy', arguments: { service: 'api', version: '2.4.1', canary: true } };

describe('the action under decision', () => {
  it('is kept with its digest, sha256 over its RFC 8785 text', async () => {
    const task = await newTask();
    const action = { ...deploy, target: { type: 'task', id: task.id, version: task.version } };
    const res = await raise({ action });
    expect(res.status).toBe(201);
    const d = res.body.decision;
    expect(d.action).toEqual(action);
    expect(d.action_digest).toBe(digest(action));
    expect(d).toMatchObject({ editable: false, grant_ttl_seconds: 900, approved_action: null, grant: null });
    // About an action on a task, the decision is about that task.
    expect(d.task_id).toBe(task.id);
    const polled = await app.request('GET', `/decisions/${d.id}`);
    expect(polled.body.decision.action_digest).toBe(digest(action));
  });

  it('refuses a target not at the version named (409 approval_stale), and what needs an action without one, changing nothing', async () => {
    const task = await newTask();
    await app.expectUnchanged(async () => {
      const stale = await raise({ action: { ...deploy, target: { type: 'task', id: task.id, version: task.version + 1 } } });
      expect(stale.status).toBe(409);
      expect(stale.body.error).toMatchObject({ code: 'approval_stale', details: { current_version: task.version } });
      const noAction = await raise({ editable: true, grant_ttl_seconds: 60 });
      expect(noAction.status).toBe(400);
      expect(noAction.body.error.code).toBe('validation_failed');
      const big = await raise({ action: { tool: 'write', arguments: { text: 'x'.repeat(64 * 1024) } } });
      expect(big.status).toBe(400);
      expect(big.body.error.code).toBe('validation_failed');
      const longTtl = await raise({ action: deploy, grant_ttl_seconds: 86_401 });
      expect(longTtl.status).toBe(400);
      const noTool = await raise({ action: { tool: '', arguments: {} } });
      expect(noTool.status).toBe(400);
      const missingTask = await raise({
        action: { ...deploy, target: { type: 'task', id: '00000000-0000-4000-8000-000000000000', version: 1 } },
      });
      expect(missingTask.status).toBe(404);
    });
  });
});

describe('the grant', () => {
  it('verifies with the workspace’s JWKS alone, and names the decision, the action, the target and the approver', async () => {
    const task = await newTask();
    const action = { ...deploy, target: { type: 'task', id: task.id, version: task.version } };
    const d = await approved(action);
    expect(d.approved_action).toEqual(action);
    expect(d.approved_action_digest).toBe(digest(action));
    expect(d.grant).toMatchObject({ action_digest: digest(action), consumed_at: null, voided_at: null });

    const jwksRes = await app.request('GET', `/workspaces/${app.ws.workspaceId}/jwks.json`, { key: null });
    expect(jwksRes.status).toBe(200);
    expect(jwksRes.headers.get('cache-control')).toBe('public, max-age=300');
    const { payload, protectedHeader } = await jwtVerify(d.grant.token, createLocalJWKSet(jwksRes.body), {
      algorithms: ['EdDSA'],
      typ: 'grant+jwt',
    });
    expect(protectedHeader.kid).toBe(jwksRes.body.keys[0].kid);
    expect(payload).toMatchObject({
      iss: 'http://localhost:3000',
      sub: d.id,
      jti: d.grant.id,
      wid: app.ws.workspaceId,
      azp: app.ws.apiKeyId,
      act: digest(action),
      tgt: { type: 'task', id: task.id, version: task.version },
      apr: { type: 'human', id: approver.userId },
    });
    expect(payload.exp! - payload.iat!).toBe(900);
    expect(new Date(payload.exp! * 1000).toISOString()).toBe(d.grant.expires_at);

    // The same token each time it is read (it is signed again, deterministically), and in no event.
    const again = await app.request('GET', `/decisions/${d.id}`);
    expect(again.body.decision.grant.token).toBe(d.grant.token);
    const events = await app.request('GET', '/events/stream?limit=100');
    expect(events.text).not.toContain(d.grant.token.split('.')[2]);
    const [issued] = await grantEvents(d.grant.id);
    expect(issued).toMatchObject({ eventType: 'grant.issued', payload: { grant_id: d.grant.id, action_digest: digest(action) } });
  });

  it('is consumed once: of twenty presentations at once, one 200 and nineteen 409 grant_used', async () => {
    const d = await approved(deploy);
    const answers = await Promise.all(Array.from({ length: 20 }, () => consume(d.grant.token, digest(deploy))));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.body.data).toMatchObject({ grant_id: d.grant.id, decision_id: d.id });
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => [a.status, a.body.error.code])).toEqual(Array.from({ length: 19 }, () => [409, 'grant_used']));
    expect((await grantEvents(d.grant.id)).map((e) => e.eventType)).toEqual(['grant.issued', 'grant.consumed']);
    const polled = await app.request('GET', `/decisions/${d.id}`);
    expect(polled.body.decision.grant.consumed_at).toBe(ok[0]!.body.data.consumed_at);
  });

  it('presented for another action: 409 grant_mismatch, recorded, and still usable for its own', async () => {
    const d = await approved(deploy);
    const other = digest({ ...deploy, arguments: { ...deploy.arguments, version: '9.9.9' } });
    const wrong = await consume(d.grant.token, other);
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toMatchObject({ code: 'grant_mismatch', details: { grant_id: d.grant.id } });
    const refusedEvent = (await grantEvents(d.grant.id)).at(-1);
    expect(refusedEvent).toMatchObject({
      eventType: 'grant.refused',
      payload: { reason: 'grant_mismatch', presented_digest: other, action_digest: digest(deploy) },
    });
    expect((await consume(d.grant.token, digest(deploy))).status).toBe(200);
  });

  it('past its expiry: 409 grant_expired, recorded', async () => {
    const d = await approved(deploy, { grant_ttl_seconds: 1 });
    await new Promise((r) => setTimeout(r, Date.parse(d.grant.expires_at) - Date.now() + 50));
    const late = await consume(d.grant.token, digest(deploy));
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('grant_expired');
    expect((await grantEvents(d.grant.id)).at(-1)).toMatchObject({ eventType: 'grant.refused', payload: { reason: 'grant_expired' } });
  });

  it('whose task changed after the approval: 409 approval_stale, recorded, and void from then on', async () => {
    const task = await newTask();
    const action = { ...deploy, target: { type: 'task', id: task.id, version: task.version } };
    const d = await approved(action);
    const patched = await app.request('PATCH', `/tasks/${task.id}`, { body: { title: 'Ship the other fix' } });
    expect(patched.status).toBe(200);
    const stale = await consume(d.grant.token, digest(action));
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({
      code: 'approval_stale',
      details: { version: task.version, current_version: task.version + 1 },
    });
    const again = await consume(d.grant.token, digest(action));
    expect(again.body.error.code).toBe('approval_stale');
    expect((await grantEvents(d.grant.id)).map((e) => [e.eventType, e.payload.reason])).toEqual([
      ['grant.issued', undefined],
      ['grant.refused', 'approval_stale'],
      ['grant.refused', 'approval_stale'],
    ]);
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.grant.voided_at).toMatch(/Z$/);
  });

  it('holds for its task as the decision’s own hold and the approval’s resumed run left it', async () => {
    const task = await newTask();
    const run = await app.request('POST', '/runs', { body: { task_id: task.id } });
    expect(run.status).toBe(201);
    const version = await taskVersion(task.id);
    const action = { ...deploy, target: { type: 'task', id: task.id, version } };
    const raised = await raise({ action, run_id: run.body.data.runId, blocks_task: true });
    expect(raised.status).toBe(201);
    const id = raised.body.decision.id;
    const att = await app.request('POST', `/decisions/${id}/attention`, { body: { continuation: { strategy: 'resume_session' } } });
    expect(att.status).toBe(200);
    // Raising paused the run and the task with it; approving resumed both.
    expect(await taskVersion(task.id)).toBeGreaterThan(version);
    const res = await approve(id);
    expect(res.status).toBe(200);
    expect((await app.request('GET', `/runs/${run.body.data.runId}`)).body.data.status).toBe('running');
    const polled = await app.request('GET', `/decisions/${id}`);
    const used = await consume(polled.body.decision.grant.token, digest(action));
    expect(used.status).toBe(200);
  });

  it('is named in the receipt of the work it was used for, which still validates', async () => {
    const task = await newTask();
    const action = { ...deploy, target: { type: 'task', id: task.id, version: task.version } };
    const d = await approved(action);
    const used = await consume(d.grant.token, digest(action));
    expect(used.status).toBe(200);
    const receipt = await app.request('GET', `/receipts/${task.receiptId}`);
    expect(receipt.status).toBe(200);
    expect(receipt.body.rulings).toEqual([
      expect.objectContaining({
        decision_id: d.id,
        outcome: 'approved',
        grant: { grant_id: d.grant.id, action_digest: digest(action), consumed_at: used.body.data.consumed_at },
      }),
    ]);
    const checked = await app.request('POST', '/agent-work-receipts/validate', { key: null, body: receipt.body });
    expect(checked.body).toEqual({ ok: true, valid: true, issues: [] });
  });

  it('a token changed, or of another workspace: 400 and 404, and nothing written', async () => {
    const d = await approved(deploy);
    const [h, p, s] = d.grant.token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400 })).toString('base64url')}.${s}`;
    const other = await app.createWorkspace();
    await app.expectUnchanged(async () => {
      const changed = await consume(forged, digest(deploy));
      expect(changed.status).toBe(400);
      expect(changed.body.error.code).toBe('validation_failed');
      const junk = await consume('not-a-token', digest(deploy));
      expect(junk.status).toBe(400);
      const theirs = await consume(d.grant.token, digest(deploy), other.apiKey);
      expect(theirs.status).toBe(404);
      const human = await app.request('POST', '/grants/consume', {
        session: approver.session,
        body: { token: d.grant.token, action_digest: digest(deploy) },
      });
      expect(human.status).toBe(401);
    });
    expect(decodeProtectedHeader(d.grant.token)).toMatchObject({ alg: 'EdDSA', typ: 'grant+jwt' });
  });
});

describe('an edited approval', () => {
  it('approves the approver’s arguments: the agent reads them back and the grant carries their digest', async () => {
    const edited = { ...deploy.arguments, canary: false, note: 'skip the canary' };
    const d = await approved(deploy, { editable: true }, { arguments: edited });
    const polled = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
    expect(polled.action).toEqual(deploy);
    expect(polled.approved_action).toEqual({ ...deploy, arguments: edited });
    expect(polled.action_digest).toBe(digest(deploy));
    expect(polled.approved_action_digest).toBe(digest({ ...deploy, arguments: edited }));
    const claims = JSON.parse(Buffer.from(polled.grant.token.split('.')[1], 'base64url').toString());
    expect(claims.act).toBe(digest({ ...deploy, arguments: edited }));
    const page = await app.request('GET', '/events/stream?limit=100&type=decision.approved');
    const event = page.body.data.find((e: { aggregateId: string }) => e.aggregateId === d.id);
    expect(event.payload).toMatchObject({ approved_action_digest: digest({ ...deploy, arguments: edited }) });
    expect((await consume(polled.grant.token, digest(deploy))).body.error.code).toBe('grant_mismatch');
    expect((await consume(polled.grant.token, digest({ ...deploy, arguments: edited }))).status).toBe(200);
  });

  it('is refused on a decision that is not editable, changing nothing', async () => {
    const raised = await raise({ action: deploy });
    await app.expectUnchanged(async () => {
      const res = await approve(raised.body.decision.id, { arguments: { service: 'db' } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'validation_failed', details: { issues: [{ path: 'arguments' }] } });
    });
  });
});

describe('the projections', () => {
  it('rebuild the grants and the actions from the ledger as they are', async () => {
    const { state } = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    const tables = await loadFromTables(app.runtime.db, app.ws.workspaceId);
    expect(state.grants.size).toBeGreaterThan(5);
    expect(state.grants).toEqual(tables.grants);
    expect(state.decisions).toEqual(tables.decisions);
  });
});
