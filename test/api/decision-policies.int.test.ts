/**
 * Decision policies over HTTP: quorum, chosen approvers, veto and its absence, stages,
 * what a policy may not ask, and the ledger a replay rebuilds the same tables from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '@/server/ledger/canonical';
import { replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { startTestApp, type TestApp, type TestMember, type TestWorkspace } from '../support/app';
import { internalClient } from '../support/internal';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** A workspace of its own (policies read who its members are), with `n` approvers. */
async function team(n: number): Promise<{ ws: TestWorkspace; people: TestMember[] }> {
  const ws = await app.createWorkspace();
  const people: TestMember[] = [];
  for (let i = 0; i < n; i++) people.push(await app.member('approver', ws.workspaceId));
  return { ws, people };
}

async function raise(ws: TestWorkspace, body: Record<string, unknown>) {
  const res = await app.request('POST', '/decisions', {
    key: ws.apiKey,
    body: { workspace_id: ws.workspaceId, title: 'Pay the invoice', ...body },
  });
  return res;
}

const rule = (id: string, action: 'approve' | 'decline', who: TestMember, body: Record<string, unknown> = {}) =>
  app.request('POST', `/decisions/${id}/${action}`, { session: who.session, body });

const types = (decision: { history: { event_type: string }[] }) => decision.history.map((h) => h.event_type);

describe('a policy on a decision', () => {
  it('2 approvals: the first leaves it pending with one approval, a second ruling by the same person is 409, the second approver approves it', async () => {
    const { ws, people } = await team(3);
    const [a, b] = people as [TestMember, TestMember];
    const raised = await raise(ws, { policy: { approvals_required: 2 } });
    expect(raised.status).toBe(201);
    const d = raised.body.decision;
    expect(d.policy).toEqual({
      veto: true,
      stages: [{ name: 'approval', approvals_required: 2, approvers: { roles: ['owner', 'approver'], user_ids: [] } }],
      escalation: [],
    });
    expect(d.policy_digest).toBe(`sha256:${sha256Hex(canonicalJson(d.policy))}`);
    expect(d.policy_source).toEqual({ type: 'request', rule_index: null, rules_version: null });

    const first = await rule(d.id, 'approve', a, { note: 'fine by me' });
    expect(first.status).toBe(200);
    expect(first.body.decision.status).toBe('pending');
    expect(first.body.decision.resolution).toBeNull();
    expect(first.body.decision.approvals).toEqual([
      { approver_id: a.userId, name: 'approver person', stage: 'approval', at: expect.any(String) },
    ]);
    const polled = await app.request('GET', `/decisions/${d.id}`, { key: ws.apiKey });
    expect(polled.body.decision.status).toBe('pending');
    expect(polled.body.decision.approvals).toHaveLength(1);
    expect(types(polled.body.decision)).toEqual(['decision.created', 'decision.approval_recorded']);

    const before = polled.body.decision;
    await app.expectUnchanged(async () => {
      const again = await rule(d.id, 'approve', a);
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('already_ruled');
      const declineAgain = await rule(d.id, 'decline', a);
      expect(declineAgain.body.error.code).toBe('already_ruled');
    });
    expect((await app.request('GET', `/decisions/${d.id}`, { key: ws.apiKey })).body.decision.updated_at).toBe(before.updated_at);

    const second = await rule(d.id, 'approve', b);
    expect(second.status).toBe(200);
    expect(second.body.decision.status).toBe('approved');
    expect(second.body.decision.resolution).toMatchObject({ outcome: 'approved', resolved_by: b.userId });
    expect(second.body.decision.approvals.map((x: { approver_id: string }) => x.approver_id)).toEqual([a.userId, b.userId]);
    expect(types(second.body.decision)).toEqual([
      'decision.created',
      'decision.approval_recorded',
      'decision.approval_recorded',
      'decision.approved',
    ]);
    const created = await app.request('GET', `/events/stream?type=decision.created&limit=100`, { key: ws.apiKey });
    const event = created.body.data.find((e: { aggregateId: string }) => e.aggregateId === d.id);
    expect(event.payload.policy).toEqual(d.policy);
    expect(event.payload.policy_digest).toBe(d.policy_digest);
  });

  it('chosen approvers: a member the policy does not name gets 403 and nothing changes; a viewer named is refused at creation', async () => {
    const { ws, people } = await team(3);
    const [a, b, c] = people as [TestMember, TestMember, TestMember];
    const d = (await raise(ws, { policy: { approvals_required: 2, approvers: { user_ids: [a.userId, b.userId] } } })).body.decision;
    await app.expectUnchanged(async () => {
      for (const action of ['approve', 'decline'] as const) {
        const res = await rule(d.id, action, c);
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe('forbidden');
      }
    });
    expect((await rule(d.id, 'approve', a)).body.decision.status).toBe('pending');
    expect((await rule(d.id, 'approve', b)).body.decision.status).toBe('approved');

    const viewer = await app.member('viewer', ws.workspaceId);
    await app.expectUnchanged(async () => {
      const res = await raise(ws, { policy: { approvers: { user_ids: [viewer.userId] } } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.message).toContain(viewer.userId);
    });
  });

  it('veto: one decline ends a 2-of-3 at once', async () => {
    const { ws, people } = await team(3);
    const [a, b] = people as [TestMember, TestMember];
    const d = (await raise(ws, { policy: { approvals_required: 2, approvers: { user_ids: people.map((p) => p.userId) } } })).body.decision;
    await rule(d.id, 'approve', a);
    const declined = await rule(d.id, 'decline', b, { note: 'not this month' });
    expect(declined.body.decision.status).toBe('declined');
    expect(declined.body.decision.declines).toEqual([]);
    expect(types(declined.body.decision)).toEqual(['decision.created', 'decision.approval_recorded', 'decision.declined']);
  });

  it('without veto: a decline is recorded while the quorum can still be met, and declines it once it cannot', async () => {
    const { ws, people } = await team(3);
    const [a, b, c] = people as [TestMember, TestMember, TestMember];
    const d = (await raise(ws, { policy: { approvals_required: 2, veto: false, approvers: { user_ids: people.map((p) => p.userId) } } }))
      .body.decision;
    const first = await rule(d.id, 'decline', a);
    expect(first.body.decision.status).toBe('pending');
    expect(first.body.decision.declines).toMatchObject([{ approver_id: a.userId, stage: 'approval' }]);
    await rule(d.id, 'approve', b);
    // Two approvals needed, one given, and c is the only one left: c's decline leaves it out of reach.
    const last = await rule(d.id, 'decline', c);
    expect(last.body.decision.status).toBe('declined');
    expect(last.body.decision.declines.map((x: { approver_id: string }) => x.approver_id)).toEqual([a.userId, c.userId]);
    expect(types(last.body.decision)).toEqual([
      'decision.created',
      'decision.decline_recorded',
      'decision.approval_recorded',
      'decision.decline_recorded',
      'decision.declined',
    ]);
  });

  it('stages: each in order; the later stage’s approver is refused until the earlier quorum is met', async () => {
    const { ws, people } = await team(3);
    const [finance, security] = people as [TestMember, TestMember];
    const d = (
      await raise(ws, {
        policy: {
          stages: [
            { name: 'Finance', approvers: { user_ids: [finance.userId] } },
            { name: 'Security', approvers: { user_ids: [security.userId] } },
          ],
        },
      })
    ).body.decision;
    const early = await rule(d.id, 'approve', security);
    expect(early.status).toBe(403);
    expect(early.body.error.message).toContain('Finance');
    const one = await rule(d.id, 'approve', finance);
    expect(one.body.decision).toMatchObject({ status: 'pending', approvals: [{ approver_id: finance.userId, stage: 'Finance' }] });
    const two = await rule(d.id, 'approve', security);
    expect(two.body.decision.status).toBe('approved');
    expect(two.body.decision.approvals.map((x: { stage: string }) => x.stage)).toEqual(['Finance', 'Security']);
  });

  it('refuses what cannot be met or would have each approver approve something else; nothing is written', async () => {
    const { ws, people } = await team(2);
    const stranger = (await team(1)).people[0]!;
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ policy: { approvals_required: 4 } }, /cannot be met/],
      [{ policy: { approvers: { user_ids: [stranger.userId] } } }, /Not an owner or approver/],
      [{ policy: { approvers: {} } }, /names nobody/],
      [{ policy: { stages: [{ name: 'x' }, { name: 'x' }] } }, /repeated/],
      [
        { policy: { approvals_required: 2 }, action: { tool: 'payments.send', arguments: { amount: 5 } }, editable: true },
        /cannot be editable/,
      ],
      [
        {
          policy: { approvals_required: 2 },
          shape_context: {
            options: [
              { id: 'a', label: 'A' },
              { id: 'b', label: 'B' },
            ],
          },
        },
        /approve \/ decline/,
      ],
    ];
    await app.expectUnchanged(async () => {
      for (const [body, message] of bad) {
        const res = await raise(ws, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
        expect(JSON.stringify(res.body.error)).toMatch(message);
      }
    });
    // Three members can rule (the owner and two approvers): three approvals are within reach.
    expect((await raise(ws, { policy: { approvals_required: 3 } })).status).toBe(201);
    expect(people).toHaveLength(2);
  });

  it('a decision without a policy gets the default, recorded as such; a replay of the ledger rebuilds the same tables', async () => {
    const { ws, people } = await team(1);
    const d = (await raise(ws, {})).body.decision;
    expect(d.policy.stages).toEqual([
      { name: 'approval', approvals_required: 1, approvers: { roles: ['owner', 'approver'], user_ids: [] } },
    ]);
    expect(d.policy_source).toEqual({ type: 'default', rule_index: null, rules_version: null });
    const approved = await rule(d.id, 'approve', people[0]!);
    expect(approved.body.decision.status).toBe('approved');
    expect(types(approved.body.decision)).toEqual(['decision.created', 'decision.approval_recorded', 'decision.approved']);
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });
});

describe('workspace rules', () => {
  it('GET / PUT: versioned, owners and API keys only, If-Match, one ledger event with the whole document', async () => {
    const { ws, people } = await team(2);
    const owner = await app.member('owner', ws.workspaceId);
    const empty = await app.request('GET', '/decision-policy', { key: ws.apiKey });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ rules: [], version: 0 });
    expect(empty.headers.get('etag')).toBe('"0"');

    const rules = [
      { match: { tool: 'payments.*' }, policy: { approvals_required: 2 } },
      { match: { urgency: ['critical'] }, policy: { stages: [{ name: 'Lead', approvers: { user_ids: [people[0]!.userId] } }] } },
    ];
    await app.expectUnchanged(async () => {
      const approver = await app.request('PUT', '/decision-policy', {
        session: people[0]!.session,
        body: { workspace_id: ws.workspaceId, rules },
      });
      expect(approver.status).toBe(403);
      const stale = await app.request('PUT', '/decision-policy', { key: ws.apiKey, body: { rules }, headers: { 'if-match': '"3"' } });
      expect(stale.status).toBe(412);
      expect(stale.body.error.code).toBe('precondition_failed');
      const stranger = await app.request('PUT', '/decision-policy', {
        key: ws.apiKey,
        body: { rules: [{ match: {}, policy: { approvers: { user_ids: [app.ws.ownerUserId] } } }] },
      });
      expect(stranger.status).toBe(400);
    });
    const put = await app.request('PUT', '/decision-policy', { key: ws.apiKey, body: { rules }, headers: { 'if-match': '"0"' } });
    expect(put.status).toBe(200);
    expect(put.headers.get('etag')).toBe('"1"');
    expect(put.body.version).toBe(1);
    expect(put.body.rules[0]).toEqual({
      match: { tool: 'payments.*' },
      policy: {
        veto: true,
        stages: [{ name: 'approval', approvals_required: 2, approvers: { roles: ['owner', 'approver'], user_ids: [] } }],
        escalation: [],
      },
    });
    expect(put.body.rules[1].match).toEqual({ urgency: ['critical'] });
    const read = await app.request('GET', `/decision-policy?workspace_id=${ws.workspaceId}`, { session: owner.session });
    expect(read.body).toEqual(put.body);
    const events = await app.request('GET', '/events/stream?type=decision_policy.updated&limit=10', { key: ws.apiKey });
    expect(events.body.data).toHaveLength(1);
    expect(events.body.data[0].payload).toEqual({ version: 1, rules: put.body.rules, previous_version: 0 });
  });

  it('a decision without a policy gets the first matching rule’s, and records which rule of which version', async () => {
    const { ws, people } = await team(2);
    const rules = [
      { match: { tool: 'payments.*', urgency: ['urgent', 'critical'] }, policy: { approvals_required: 2 } },
      { match: { urgency: ['critical'] }, policy: { approvers: { user_ids: [people[1]!.userId] } } },
    ];
    expect((await app.request('PUT', '/decision-policy', { key: ws.apiKey, body: { rules } })).status).toBe(200);
    const pay = (await raise(ws, { action: { tool: 'payments.send', arguments: { cents: 100 } } })).body.decision;
    expect(pay.policy_source).toEqual({ type: 'rule', rule_index: 0, rules_version: 1 });
    expect(pay.policy.stages[0].approvals_required).toBe(2);
    const critical = (await raise(ws, { urgency: 'critical', action: { tool: 'deploy.prod', arguments: {} } })).body.decision;
    expect(critical.policy_source).toMatchObject({ type: 'rule', rule_index: 1 });
    // Only people[1] may approve it.
    expect((await rule(critical.id, 'approve', people[0]!)).status).toBe(403);
    expect((await rule(critical.id, 'approve', people[1]!)).body.decision.status).toBe('approved');
    const plain = (await raise(ws, { urgency: 'standard' })).body.decision;
    expect(plain.policy_source).toEqual({ type: 'default', rule_index: null, rules_version: 1 });
    const own = (await raise(ws, { action: { tool: 'payments.send', arguments: {} }, policy: { approvals_required: 1 } })).body.decision;
    expect(own.policy_source.type).toBe('request');
  });

  it('dry run: says exactly which decided decisions the proposed rules would change, and writes nothing', async () => {
    const { ws, people } = await team(2);
    const [a, b] = people as [TestMember, TestMember];
    const approvedByOne = [];
    for (let i = 0; i < 3; i++) {
      const d = (await raise(ws, { urgency: 'critical' })).body.decision;
      await rule(d.id, 'approve', a);
      approvedByOne.push(d.id);
    }
    const approvedByTwo = (await raise(ws, { urgency: 'critical', policy: { approvals_required: 2 } })).body.decision;
    await rule(approvedByTwo.id, 'approve', a);
    await rule(approvedByTwo.id, 'approve', b);
    const declined = (await raise(ws, { urgency: 'critical' })).body.decision;
    await rule(declined.id, 'decline', b);
    const standard = (await raise(ws, { urgency: 'standard' })).body.decision;
    await rule(standard.id, 'approve', b);
    await raise(ws, { urgency: 'critical' }); // pending: not decided, not replayed

    const proposed = [{ match: { urgency: ['critical'] }, policy: { approvals_required: 2 } }];
    let answer: any;
    await app.expectUnchanged(async () => {
      answer = await app.request('POST', '/decision-policy/dry-run', { key: ws.apiKey, body: { rules: proposed } });
    });
    expect(answer.status).toBe(200);
    const byId = new Map(answer.body.data.map((e: { decision_id: string }) => [e.decision_id, e]));
    expect(answer.body.data).toHaveLength(6);
    for (const id of approvedByOne)
      expect(byId.get(id)).toMatchObject({ status: 'approved', rule_index: 0, would_be: 'pending', would_change: true });
    expect(byId.get(approvedByTwo.id)).toMatchObject({ status: 'approved', rule_index: 0, would_be: 'approved', would_change: false });
    expect(byId.get(declined.id)).toMatchObject({ status: 'declined', rule_index: 0, would_be: 'declined', would_change: false });
    expect(byId.get(standard.id)).toMatchObject({ status: 'approved', rule_index: null, would_be: 'approved', would_change: false });
    expect(answer.body.totals).toEqual({ decisions: 6, would_change: 3, would_be: { approved: 2, declined: 1, pending: 3 } });

    // Only b may approve under this one: a's approvals would not have counted, b's would.
    const onlyB = [{ match: {}, policy: { approvers: { user_ids: [b.userId] } } }];
    const second = await app.request('POST', '/decision-policy/dry-run', { key: ws.apiKey, body: { rules: onlyB, limit: 2 } });
    expect(second.body.data.map((e: { decision_id: string; would_change: boolean }) => [e.decision_id, e.would_change])).toEqual([
      [standard.id, false],
      [declined.id, false],
    ]);
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });
});

describe('delegation while away', () => {
  const api = () => internalClient(app.runtime);

  it('the delegate rules wherever the member may, recorded acting_for; nobody counts twice; it ends, and is in the ledger', async () => {
    const { ws, people } = await team(3);
    const [ann, bob, cat] = people as [TestMember, TestMember, TestMember];
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const set = await api().mutate(
      'account.setAway',
      { workspace_id: ws.workspaceId, until, delegate_id: bob.userId },
      { session: ann.session },
    );
    expect(set.status).toBe(200);
    expect(set.data).toEqual({ until, delegate: { user_id: bob.userId, name: 'approver person' } });

    // Only Ann may approve (and Cat): Bob, not asked himself, approves for Ann.
    const d = (await raise(ws, { policy: { approvals_required: 2, approvers: { user_ids: [ann.userId, cat.userId] } } })).body.decision;
    const forAnn = await rule(d.id, 'approve', bob);
    expect(forAnn.status).toBe(200);
    expect(forAnn.body.decision.approvals).toMatchObject([{ approver_id: bob.userId, acting_for: ann.userId }]);
    // Neither Ann, back early, nor Bob again counts a second time.
    for (const who of [ann, bob]) expect((await rule(d.id, 'approve', who)).body.error.code).toBe('already_ruled');
    expect((await rule(d.id, 'approve', cat)).body.decision.status).toBe('approved');

    // Cat cannot take Ann's rulings on through Bob: a delegate who is away cannot be chosen, and Bob's own delegate acts only for Bob.
    const refused = await api().mutate(
      'account.setAway',
      { workspace_id: ws.workspaceId, until, delegate_id: ann.userId },
      { session: cat.session },
    );
    expect(refused.code).toBe('validation_failed');
    await api().mutate('account.setAway', { workspace_id: ws.workspaceId, until, delegate_id: cat.userId }, { session: bob.session });
    const onlyAnn = (await raise(ws, { policy: { approvers: { user_ids: [ann.userId] } } })).body.decision;
    expect((await rule(onlyAnn.id, 'approve', cat)).status).toBe(403);

    // A veto decline by the delegate ends the decision, and its resolution says for whom.
    const vetoed = (await raise(ws, { policy: { approvers: { user_ids: [ann.userId] } } })).body.decision;
    const declined = await rule(vetoed.id, 'decline', bob);
    expect(declined.body.decision.resolution).toMatchObject({ outcome: 'declined', resolved_by: bob.userId, acting_for: ann.userId });

    // Ann is back: Bob no longer rules for her.
    expect((await api().mutate('account.endAway', { workspace_id: ws.workspaceId }, { session: ann.session })).status).toBe(200);
    expect((await rule(onlyAnn.id, 'approve', bob)).status).toBe(403);
    expect((await rule(onlyAnn.id, 'approve', ann)).body.decision.status).toBe('approved');

    const events = await app.request('GET', '/events/stream?type=membership.delegation_set&type=membership.delegation_ended&limit=10', {
      key: ws.apiKey,
    });
    expect(events.body.data.map((e: { eventType: string; payload: { user_id: string } }) => [e.eventType, e.payload.user_id])).toEqual([
      ['membership.delegation_set', ann.userId],
      ['membership.delegation_set', bob.userId],
      ['membership.delegation_ended', ann.userId],
    ]);
  });

  it('refuses a delegation into the past, to oneself, to a viewer, or from outside the workspace; nothing is written', async () => {
    const { ws, people } = await team(2);
    const [ann, bob] = people as [TestMember, TestMember];
    const viewer = await app.member('viewer', ws.workspaceId);
    const soon = new Date(Date.now() + 60_000).toISOString();
    const stranger = (await team(1)).people[0]!;
    await app.expectUnchanged(async () => {
      const cases: [Record<string, unknown>, TestMember][] = [
        [{ until: new Date(Date.now() - 1000).toISOString(), delegate_id: bob.userId }, ann],
        [{ until: soon, delegate_id: ann.userId }, ann],
        [{ until: soon, delegate_id: viewer.userId }, ann],
        [{ until: new Date(Date.now() + 400 * 86_400_000).toISOString(), delegate_id: bob.userId }, ann],
      ];
      for (const [input, who] of cases) {
        const res = await api().mutate('account.setAway', { workspace_id: ws.workspaceId, ...input }, { session: who.session });
        expect(res.code, JSON.stringify(input)).toBe('validation_failed');
      }
      const outside = await api().mutate(
        'account.setAway',
        { workspace_id: ws.workspaceId, until: soon, delegate_id: bob.userId },
        { session: stranger.session },
      );
      expect(outside.status).toBe(403);
    });
  });
});
