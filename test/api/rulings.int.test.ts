/** The human ruling (approve / decline / options) and decision timeouts. */
import { replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { encode } from 'next-auth/jwt';
import { decisions, memberships, runs, tasks } from '@/db/schema';
import { encodeSession, endSessions } from '@/server/auth/session';
import { startBackgroundJobs } from '@/server/jobs';
import { sweepDecisionTimeouts } from '@/server/domain/decisions/timeouts';
import { startTestApp, type TestApp, type TestMember } from '../support/app';

let app: TestApp;
let approver: TestMember;
let owner: TestMember;
beforeAll(async () => {
  app = await startTestApp();
  approver = await app.member('approver');
  owner = await app.member('owner');
});
afterAll(async () => {
  await app?.close();
});

const MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
async function raise(body: Record<string, unknown> = {}): Promise<{ id: string }> {
  const res = await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'Rule on me', ...body } });
  expect(res.status).toBe(201);
  return res.body.decision;
}
const rule = (
  id: string,
  action: 'approve' | 'decline',
  who: { session: string },
  body: Record<string, unknown> = {},
  origin?: string | null,
) => app.request('POST', `/decisions/${id}/${action}`, { session: who.session, body, origin });

async function eventsOf(decisionId: string) {
  const res = await app.request('GET', `/decisions/${decisionId}`);
  return res.body.decision.history as { event_type: string; actor_type: string; actor_id: string; event_id: string }[];
}

describe('approve and decline', () => {
  it('an approver approves with a note: resolution, a human event, and the agent’s poll sees it', async () => {
    const d = await raise();
    const res = await rule(d.id, 'approve', approver, { note: 'Looks right.' });
    expect(res.status).toBe(200);
    const decision = res.body.decision;
    expect(decision.status).toBe('approved');
    expect(decision.resolution).toMatchObject({
      outcome: 'approved',
      option_ids: ['approve'],
      note: 'Looks right.',
      resolved_by: approver.userId,
      resolved_by_type: 'human',
      resolved_by_name: 'approver person',
    });
    expect(decision.resolution.resolved_at).toMatch(MS);

    const polled = await app.request('GET', `/decisions/${d.id}`);
    expect(polled.body.decision.status).toBe('approved');
    expect(polled.body.decision.resolution).toEqual(decision.resolution);
    const ruling = polled.body.decision.history.at(-1);
    expect(ruling).toMatchObject({ event_type: 'decision.approved', actor_type: 'human', actor_id: approver.userId });
    const page = await app.request('GET', '/events/stream?type=decision.approved&limit=100');
    const event = page.body.data.find((e: { id: string }) => e.id === ruling.event_id);
    expect(event).toMatchObject({ actorType: 'human', actorId: approver.userId, ownerId: approver.userId });
    expect(event.payload.resolution.note).toBe('Looks right.');
  });

  it('an owner declines', async () => {
    const d = await raise();
    const res = await rule(d.id, 'decline', owner, { note: 'Not now.' });
    expect(res.status).toBe(200);
    expect(res.body.decision).toMatchObject({ status: 'declined', resolution: { outcome: 'declined', option_ids: [], note: 'Not now.' } });
    expect((await eventsOf(d.id)).at(-1)?.event_type).toBe('decision.declined');
  });

  it('an API key gets 403 human_session_required and changes nothing', async () => {
    const d = await raise();
    await app.expectUnchanged(async () => {
      for (const action of ['approve', 'decline']) {
        const res = await app.request('POST', `/decisions/${d.id}/${action}`, { body: {} });
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('human_session_required');
      }
    });
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.status).toBe('pending');
  });

  it('a viewer gets 403; a member of another workspace gets 404', async () => {
    const d = await raise();
    const viewer = await app.member('viewer');
    const denied = await rule(d.id, 'approve', viewer);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');
    const elsewhere = await app.createWorkspace();
    const stranger = await app.member('owner', elsewhere.workspaceId);
    const hidden = await rule(d.id, 'approve', stranger);
    expect(hidden.status).toBe(404);
    expect((await app.request('GET', `/decisions/${d.id}`, { session: stranger.session })).status).toBe(404);
    // A viewer may read it.
    expect((await app.request('GET', `/decisions/${d.id}`, { session: viewer.session })).status).toBe(200);
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.status).toBe('pending');
  });

  it('whoever raised a decision cannot rule on it', async () => {
    const raised = await app.request('POST', '/decisions', {
      session: owner.session,
      body: { workspace_id: app.ws.workspaceId, title: 'Mine' },
    });
    const id = raised.body.decision.id;
    const self = await rule(id, 'approve', owner);
    expect(self.status).toBe(403);
    expect((await rule(id, 'approve', approver)).status).toBe(200);
  });

  it('a ruled decision is 409 decision_not_pending for rulings and attention', async () => {
    const d = await raise();
    expect((await rule(d.id, 'approve', approver)).status).toBe(200);
    for (const res of [
      await rule(d.id, 'decline', owner),
      await rule(d.id, 'approve', owner),
      await app.request('POST', `/decisions/${d.id}/attention`, { body: {} }),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('decision_not_pending');
    }
  });

  it('refuses cross-site writes and bad sessions', async () => {
    const d = await raise();
    const evil = await rule(d.id, 'approve', approver, {}, 'https://evil.example');
    expect(evil.status).toBe(403);
    expect(evil.body.error.code).toBe('forbidden');
    const noOrigin = await rule(d.id, 'approve', approver, {}, null);
    expect(noOrigin.status).toBe(403);
    const fetchSite = await app.request('POST', `/decisions/${d.id}/approve`, {
      session: approver.session,
      origin: null,
      headers: { 'sec-fetch-site': 'same-origin' },
      body: {},
    });
    expect(fetchSite.status).toBe(200);

    const d2 = await raise();
    const garbage = await rule(d2.id, 'approve', { session: 'not-a-token' });
    expect(garbage.status).toBe(401);
    const forged = await encode({ token: { sub: approver.userId }, secret: 'some-other-secret-of-32-characters-or-more' });
    expect((await rule(d2.id, 'approve', { session: forged })).status).toBe(401);
    const expired = await encode({ token: { sub: approver.userId }, secret: app.runtime.secrets.auth, maxAge: -60 });
    expect((await rule(d2.id, 'approve', { session: expired })).status).toBe(401);
  });

  it('history names who acted in words: the key’s name, the human’s name (null for the system: see timeouts)', async () => {
    const d = await raise();
    const created = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
    expect(created.history.map((h: { actor_name: string | null }) => h.actor_name)).toEqual(['test key']);
    expect((await rule(d.id, 'approve', approver)).status).toBe(200);
    const ruled = (await app.request('GET', `/decisions/${d.id}`)).body.decision.history;
    expect(ruled.map((h: { actor_type: string; actor_name: string | null }) => [h.actor_type, h.actor_name])).toEqual([
      ['api_key', 'test key'],
      ['human', 'approver person'],
      ['human', 'approver person'],
    ]);
  });

  it('accepts a session write only from the origins APP_URL names, whatever Host the request claims', async () => {
    // APP_URL is http://localhost:3000 here: a loopback name, so 127.0.0.1 and [::1] on its port are the app's too.
    const from = async (host: string, origin: string, extra: Record<string, string> = {}) => {
      const d = await raise();
      const res = await app.request('POST', `/decisions/${d.id}/approve`, {
        session: approver.session,
        headers: { host, origin, ...extra },
        body: {},
      });
      const after = (await app.request('GET', `/decisions/${d.id}`)).body.decision.status;
      return { status: res.status, code: res.body.error?.code, after };
    };
    const accepted = { status: 200, code: undefined, after: 'approved' };
    const refused = { status: 403, code: 'forbidden', after: 'pending' };
    expect(await from('127.0.0.1:3000', 'http://127.0.0.1:3000')).toEqual(accepted);
    expect(await from('127.0.0.1:3000', 'http://localhost:3000')).toEqual(accepted);
    expect(await from('[::1]:3000', 'http://[::1]:3000')).toEqual(accepted);
    // A Host is the client's own claim: one that names the sender's origin makes it no page of the app.
    expect(await from('evil.example', 'http://evil.example')).toEqual(refused);
    expect(await from('workbox.lan:3000', 'http://workbox.lan:3000')).toEqual(refused);
    // Another port or scheme is another origin; forwarded headers are the client's words too.
    expect(await from('127.0.0.1:3000', 'http://127.0.0.1:3999')).toEqual(refused);
    expect(await from('127.0.0.1:3000', 'https://localhost:3000')).toEqual(refused);
    expect(
      await from('127.0.0.1:3000', 'https://evil.example', { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }),
    ).toEqual(refused);
  });

  it('behind a proxy, APP_URL is the origin: forwarded hosts and Host name none', async () => {
    const proxied = await startTestApp({ TRUSTED_PROXY_HOPS: '1', APP_URL: 'http://work.example.com' });
    try {
      const member = await proxied.member('approver');
      const from = async (origin: string, forwardedHost: string) => {
        const created = await proxied.request('POST', '/decisions', { body: { workspace_id: proxied.ws.workspaceId, title: 'Proxied' } });
        const res = await proxied.request('POST', `/decisions/${created.body.decision.id}/approve`, {
          session: member.session,
          headers: { host: '10.0.0.5:3000', origin, 'x-forwarded-host': forwardedHost, 'x-forwarded-proto': 'https' },
          body: {},
        });
        return res.status;
      };
      expect(await from('http://work.example.com', 'work.example.com')).toBe(200);
      expect(await from('http://work.example.com', 'work.internal')).toBe(200);
      expect(await from('https://work.internal', 'work.internal')).toBe(403);
      expect(await from('https://evil.example', 'evil.example')).toBe(403);
      expect(await from('https://work.example.com', 'work.example.com')).toBe(403);
      expect(await from('http://10.0.0.5:3000', 'work.example.com')).toBe(403);
      // Loopback spellings are the app's only when APP_URL itself is loopback.
      expect(await from('http://127.0.0.1:3000', 'work.example.com')).toBe(403);
    } finally {
      await proxied.close();
    }
  });

  it('approve versus decline raced 50 times ends in exactly one terminal state each time', async () => {
    for (let i = 0; i < 50; i++) {
      const d = await raise({ title: `race ${i}` });
      const [a, b] = await Promise.all([rule(d.id, 'approve', approver), rule(d.id, 'decline', owner)]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const polled = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
      const winner = a.status === 200 ? 'approved' : 'declined';
      expect(polled.status).toBe(winner);
      // The winner's events only: an approval is recorded towards the policy, then the decision approved.
      const rulings = polled.history.filter((h: { event_type: string }) => h.event_type !== 'decision.created');
      expect(rulings.map((h: { event_type: string }) => h.event_type)).toEqual(
        winner === 'approved' ? ['decision.approval_recorded', 'decision.approved'] : ['decision.declined'],
      );
    }
  });
});

describe('options', () => {
  const options = [
    { id: 'red', label: 'Red' },
    { id: 'blue', label: 'Blue' },
    { id: 'green', label: 'Green' },
  ];

  it('option_select: exactly one known option', async () => {
    const d = await raise({ shape_context: { options } });
    for (const body of [{}, { option_ids: ['red', 'blue'] }, { option_ids: ['purple'] }]) {
      const res = await rule(d.id, 'approve', approver, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      // A sentence, whatever the option ids are.
      expect(res.body.error.message).toMatch(/^(Choose exactly one option|Option purple is not one of the decision’s options)$/);
    }
    const ok = await rule(d.id, 'approve', approver, { option_ids: ['blue'] });
    expect(ok.body.decision.resolution.option_ids).toEqual(['blue']);
  });

  it('option_multiselect: one or more', async () => {
    const d = await raise({ shape: 'option_multiselect', shape_context: { options } });
    expect((await rule(d.id, 'approve', approver, {})).status).toBe(400);
    const ok = await rule(d.id, 'approve', approver, { option_ids: ['red', 'green'] });
    expect(ok.body.decision.resolution.option_ids).toEqual(['red', 'green']);
  });

  it('the default pair: approve chooses approve; declining names no option', async () => {
    const d = await raise();
    expect((await rule(d.id, 'approve', approver, { option_ids: ['decline'] })).status).toBe(400);
    expect((await rule(d.id, 'decline', approver, { option_ids: ['decline'] })).status).toBe(400);
    const ok = await rule(d.id, 'approve', approver, { option_ids: ['approve'] });
    expect(ok.body.decision.resolution.option_ids).toEqual(['approve']);
  });

  it('rulings refuse unknown fields and overlong notes', async () => {
    const d = await raise();
    expect((await rule(d.id, 'approve', approver, { outcome: 'declined' })).body.error.code).toBe('unknown_field');
    expect((await rule(d.id, 'decline', approver, { note: 'x'.repeat(2001) })).body.error.code).toBe('validation_failed');
  });
});

describe('timeouts', () => {
  it('past due_at a poll shows it expired by the system, with its event', async () => {
    const d = await raise({ due_at: new Date(Date.now() + 400).toISOString() });
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.status).toBe('pending');
    await new Promise((r) => setTimeout(r, 500));
    const polled = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
    expect(polled.status).toBe('expired');
    expect(polled.resolution).toMatchObject({ outcome: 'expired', resolved_by: 'system', resolved_by_type: 'system' });
    expect(polled.history.at(-1)).toMatchObject({ event_type: 'decision.expired', actor_type: 'system', actor_name: null });
    expect((await rule(d.id, 'approve', approver)).status).toBe(409);
  });

  it('on_timeout decline declines by the system', async () => {
    const d = await raise({ due_at: new Date(Date.now() + 300).toISOString(), on_timeout: 'decline' });
    await new Promise((r) => setTimeout(r, 400));
    const polled = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
    expect(polled).toMatchObject({ status: 'declined', resolution: { outcome: 'declined', resolved_by: 'system' } });
    expect(polled.history.at(-1)).toMatchObject({ event_type: 'decision.declined', actor_type: 'system' });
  });

  it('the sweep times out every overdue decision once, without anyone reading them', async () => {
    const ws = await app.createWorkspace();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await app.request('POST', '/decisions', {
        key: ws.apiKey,
        body: { workspace_id: ws.workspaceId, title: `due ${i}`, due_at: new Date(Date.now() + 60_000).toISOString() },
      });
      ids.push(res.body.decision.id);
    }
    const later = new Date(Date.now() + 120_000);
    expect(await sweepDecisionTimeouts(app.runtime.db, { workspaceId: ws.workspaceId, now: later })).toBe(3);
    expect(await sweepDecisionTimeouts(app.runtime.db, { workspaceId: ws.workspaceId, now: later })).toBe(0);
    for (const id of ids) {
      const d = (await app.request('GET', `/decisions/${id}`, { key: ws.apiKey })).body.decision;
      expect(d.status).toBe('expired');
      expect(d.history.filter((h: { event_type: string }) => h.event_type === 'decision.expired')).toHaveLength(1);
    }
    expect((await app.request('GET', '/ledger/verify', { key: ws.apiKey })).body.data.ok).toBe(true);
  });

  it('a decision not yet due is left alone', async () => {
    const d = await raise({ due_at: new Date(Date.now() + 3_600_000).toISOString() });
    await sweepDecisionTimeouts(app.runtime.db);
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.status).toBe('pending');
  });
});

it('the ledger verifies after all of it', async () => {
  const res = await app.request('GET', '/ledger/verify');
  expect(res.body.data.ok).toBe(true);
});

describe('runs paused for a decision, and continuation after approval', () => {
  async function runningRun(status: 'running' | 'paused' = 'running'): Promise<{ runId: string; taskId: string }> {
    const work = await app.request('POST', '/work', { body: { title: 'agent task' } });
    const taskId = work.body.data.taskId as string;
    const run = await app.request('POST', '/runs', { body: { task_id: taskId, agent_id: 'agent-7' } });
    expect(run.status).toBe(201);
    const runId = run.body.data.runId as string;
    if (status === 'paused') expect((await app.request('POST', `/runs/${runId}/actions/pause`, { body: {} })).status).toBe(200);
    return { runId, taskId };
  }
  const runRow = async (id: string) => (await app.runtime.db.select().from(runs).where(eq(runs.id, id)))[0];
  const runStatus = async (id: string) => (await runRow(id))?.status;
  const ask = (id: string, strategy: string) => app.request('POST', `/decisions/${id}/attention`, { body: { continuation: { strategy } } });

  it('a blocking decision raised on a running run pauses it, with an event', async () => {
    const { runId } = await runningRun();
    const d = await raise({ run_id: runId, blocks_task: true });
    expect(await runRow(runId)).toMatchObject({ status: 'paused', pausedForDecisionId: d.id });
    const events = await app.request('GET', '/events/stream?type=run.paused&limit=100');
    expect(events.body.data.find((e: { aggregateId: string }) => e.aggregateId === runId)?.payload).toMatchObject({ decision_id: d.id });
    const nonBlocking = await runningRun();
    await raise({ run_id: nonBlocking.runId });
    expect(await runStatus(nonBlocking.runId)).toBe('running');
  });

  it('resume_session resumes the run paused for the decision', async () => {
    const { runId } = await runningRun();
    const d = await raise({ run_id: runId, blocks_task: true });
    const asked = await ask(d.id, 'resume_session');
    expect(asked.body.data.blocking.run_id).toBe(runId);
    expect(asked.body.data.blocking.initiative_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await rule(d.id, 'approve', approver)).status).toBe(200);
    expect(await runRow(runId)).toMatchObject({ status: 'running', pausedForDecisionId: null });
    const events = await app.request('GET', '/events/stream?type=run.resumed&limit=100');
    expect(events.body.data.find((e: { aggregateId: string }) => e.aggregateId === runId)?.payload).toMatchObject({ decision_id: d.id });
  });

  it('restart_task re-dispatches the task: the run is cancelled, the task is todo, a new run is queued', async () => {
    const { runId, taskId } = await runningRun();
    const d = await raise({ run_id: runId, blocks_task: true });
    await ask(d.id, 'restart_task');
    expect((await rule(d.id, 'approve', approver)).status).toBe(200);
    expect(await runStatus(runId)).toBe('cancelled');
    const taskRuns = await app.runtime.db.select().from(runs).where(eq(runs.taskId, taskId));
    expect(taskRuns.map((r) => r.status).sort()).toEqual(['cancelled', 'queued']);
    expect((await app.runtime.db.select().from(tasks).where(eq(tasks.id, taskId)))[0]?.status).toBe('todo');
    const events = await app.request('GET', '/events/stream?type=task.redispatched&limit=100');
    expect(events.body.data.find((e: { aggregateId: string }) => e.aggregateId === taskId)?.payload).toMatchObject({
      previous_run_id: runId,
    });
    expect((await app.request('GET', '/ledger/verify')).body.data.ok).toBe(true);
  });

  it('leaves the run paused: manual, a decline, no strategy, a run paused for another reason, work paused above it', async () => {
    for (const [strategy, action] of [
      ['manual', 'approve'],
      ['resume_session', 'decline'],
      [null, 'approve'],
    ] as const) {
      const { runId } = await runningRun();
      const d = await raise({ run_id: runId, blocks_task: true });
      if (strategy) await ask(d.id, strategy);
      expect((await rule(d.id, action, approver)).status).toBe(200);
      expect(await runStatus(runId), `${strategy} ${action}`).toBe('paused');
    }
    const pausedElsewhere = await runningRun('paused');
    const d = await raise({ run_id: pausedElsewhere.runId, blocks_task: true });
    await ask(d.id, 'resume_session');
    expect((await rule(d.id, 'approve', approver)).status).toBe(200);
    expect(await runStatus(pausedElsewhere.runId)).toBe('paused');

    const held = await runningRun();
    const d2 = await raise({ run_id: held.runId, blocks_task: true });
    expect((await app.request('POST', '/lifecycle', { body: { level: 'task', id: held.taskId, action: 'pause' } })).status).toBe(200);
    await ask(d2.id, 'restart_task');
    expect((await rule(d2.id, 'approve', approver)).status).toBe(200);
    expect(await runRow(held.runId)).toMatchObject({ status: 'paused', pausedForDecisionId: null });
    expect((await app.runtime.db.select().from(runs).where(eq(runs.taskId, held.taskId))).length).toBe(1);
  });

  it('the tables equal the ledger replayed after all of it', async () => {
    const replayed = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, app.ws.workspaceId));
  });
});

describe('cancel', () => {
  it('an owner cancels a pending decision (even one they raised); approvers, viewers and keys cannot', async () => {
    const d = await raise();
    const viewer = await app.member('viewer');
    for (const who of [approver, viewer]) {
      const res = await app.request('POST', `/decisions/${d.id}/cancel`, { session: who.session, body: {} });
      expect(res.status).toBe(403);
    }
    const byKey = await app.request('POST', `/decisions/${d.id}/cancel`, { body: {} });
    expect(byKey.body.error.code).toBe('human_session_required');
    const ok = await app.request('POST', `/decisions/${d.id}/cancel`, { session: owner.session, body: { note: 'No longer needed.' } });
    expect(ok.status).toBe(200);
    expect(ok.body.decision).toMatchObject({
      status: 'cancelled',
      resolution: { outcome: 'cancelled', note: 'No longer needed.', resolved_by: owner.userId },
    });
    expect(ok.body.decision.history.at(-1).event_type).toBe('decision.cancelled');
    expect((await rule(d.id, 'approve', approver)).status).toBe(409);

    const mine = await app.request('POST', '/decisions', {
      session: owner.session,
      body: { workspace_id: app.ws.workspaceId, title: 'Withdraw me' },
    });
    const withdrawn = await app.request('POST', `/decisions/${mine.body.decision.id}/cancel`, { session: owner.session, body: {} });
    expect(withdrawn.status).toBe(200);
  });
});

describe('sessions and roles take effect at once', () => {
  it('a role lowered to viewer can no longer rule; a removed member sees 404', async () => {
    const person = await app.member('approver');
    const d = await raise();
    await app.runtime.db
      .update(memberships)
      .set({ role: 'viewer' })
      .where(and(eq(memberships.userId, person.userId), eq(memberships.workspaceId, app.ws.workspaceId)));
    expect((await rule(d.id, 'approve', person)).status).toBe(403);
    await app.runtime.db.delete(memberships).where(eq(memberships.userId, person.userId));
    expect((await app.request('GET', `/decisions/${d.id}`, { session: person.session })).status).toBe(404);
  });

  it('signing out ends every session issued before, even a copied cookie', async () => {
    const person = await app.member('approver');
    const d = await raise();
    expect((await app.request('GET', `/decisions/${d.id}`, { session: person.session })).status).toBe(200);
    await endSessions(app.runtime.db, person.userId);
    expect((await app.request('GET', `/decisions/${d.id}`, { session: person.session })).status).toBe(401);
    const fresh = await encodeSession(person.userId, app.runtime.secrets.auth, 1);
    expect((await rule(d.id, 'approve', { session: fresh })).status).toBe(200);
  });

  it('cookie-authenticated raising and attention also need the app’s own origin', async () => {
    const raised = await app.request('POST', '/decisions', {
      session: owner.session,
      origin: 'https://evil.example',
      body: { workspace_id: app.ws.workspaceId, title: 'x' },
    });
    expect(raised.status).toBe(403);
    const d = await raise();
    const asked = await app.request('POST', `/decisions/${d.id}/attention`, {
      session: owner.session,
      origin: 'https://evil.example',
      body: {},
    });
    expect(asked.status).toBe(403);
  });
});

describe('races', () => {
  it('attention racing a ruling never lands after it', async () => {
    for (let i = 0; i < 20; i++) {
      const d = await raise({ title: `attention race ${i}` });
      const [asked, ruled] = await Promise.all([
        app.request('POST', `/decisions/${d.id}/attention`, { body: {} }),
        rule(d.id, 'approve', approver),
      ]);
      expect(ruled.status).toBe(200);
      expect([200, 409]).toContain(asked.status);
      const history = (await app.request('GET', `/decisions/${d.id}`)).body.decision.history.map(
        (h: { event_type: string }) => h.event_type,
      );
      const approvedAt = history.indexOf('decision.approved');
      expect(history.slice(approvedAt + 1)).toEqual([]);
      expect(history.includes('decision.attention_requested')).toBe(asked.status === 200);
    }
  });

  it('a ruling racing the timeout sweep: exactly one terminal event', async () => {
    for (let i = 0; i < 10; i++) {
      const d = await raise({ title: `sweep race ${i}`, due_at: new Date(Date.now() + 150).toISOString() });
      await new Promise((r) => setTimeout(r, 160));
      const [ruled] = await Promise.all([rule(d.id, 'approve', approver), sweepDecisionTimeouts(app.runtime.db)]);
      expect([200, 409]).toContain(ruled.status);
      const decision = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
      const terminal = decision.history.filter((h: { event_type: string }) => h.event_type !== 'decision.created');
      expect(terminal).toHaveLength(1);
      expect(decision.status).toBe(ruled.status === 200 ? 'approved' : 'expired');
    }
  });
});

describe('the background sweep', () => {
  it('times out an overdue decision with nobody reading it', async () => {
    const d = await raise({ due_at: new Date(Date.now() + 200).toISOString() });
    const stop = startBackgroundJobs(app.runtime, { sweepMs: 50 });
    try {
      await expect
        .poll(
          async () => (await app.runtime.db.select({ status: decisions.status }).from(decisions).where(eq(decisions.id, d.id)))[0]?.status,
          {
            timeout: 5_000,
          },
        )
        .toBe('expired');
    } finally {
      await stop();
    }
  });
});
