/**
 * What a ruling, an escalation or a timeout does to a decision (decide.ts, read-ruling.ts), as a
 * table of cases without a database: each row is the decision, the policy and what happened, and
 * what must come of it (the events with their key payload fields and the row's changes, the grant
 * to issue), or the domain error it is refused with.
 */
import { describe, expect, it } from 'vitest';
import type { DecisionAction, DecisionPolicy, MembershipRole } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';
import type { NewEvent } from '@/server/ledger/event-types';
import { AppError, type ErrorCode } from '@/server/errors';
import type { PasskeyProof } from '../passkeys/ruling';
import { decide, escalate, factsNeeded, grantTargetVersion, timeOut, type Decided, type GrantToIssue } from './decide';
import { readRuling, type DecisionState, type RulingIntent } from './read-ruling';
import { DEFAULT_OPTIONS } from './options';
import { DEFAULT_POLICY, resolvePolicy, type Member, type PolicyInput } from './policy';

const AT = new Date('2026-11-28T12:00:00.000Z');
const at = AT.toISOString();
const m = (user_id: string, role: MembershipRole = 'approver'): Member => ({ user_id, role });
const ruled = (approver_id: string, stage = 'approval', acting_for?: string) => ({
  approver_id,
  name: null,
  stage,
  at: '2026-11-28T11:00:00.000Z',
  ...(acting_for ? { acting_for } : {}),
});
const ACTION: DecisionAction = { tool: 'deploy', arguments: { env: 'prod' }, target: { type: 'task', id: 'task-1', version: 3 } };

const decision = (over: Partial<DecisionState> = {}): DecisionState => ({
  id: 'd1',
  status: 'pending',
  createdByType: 'api_key',
  createdById: 'key-1',
  shape: 'generic',
  options: DEFAULT_OPTIONS,
  action: null,
  editable: false,
  requirePasskey: false,
  targetVersion: null,
  approvals: [],
  declines: [],
  escalatedSteps: 0,
  ...over,
});

const proof: PasskeyProof = {
  credential_id: 'cred-1',
  statement: {
    decision_id: 'd1',
    outcome: 'approved',
    option_id: 'approve',
    option_ids: ['approve'],
    action_digest: null,
    approver_id: 'u1',
    nonce: 'n',
    issued_at: at,
  },
  authenticator_data: 'YQ',
  client_data_json: 'Yg',
  signature: 'Yw',
};
const registered: NewEvent = {
  aggregateType: 'passkey',
  aggregateId: 'pk-1',
  eventType: 'passkey.registered',
  payload: { passkey_id: 'pk-1', user_id: 'u1', credential_id: 'cred-1', public_key_spki: 'AA', algorithm: -7, name: 'Laptop' },
};

interface Case {
  name: string;
  decision?: Partial<DecisionState>;
  policy?: PolicyInput;
  by?: Member;
  outcome?: RulingIntent['outcome'];
  option_ids?: string[];
  arguments?: Record<string, unknown>;
  passkey?: boolean;
  away?: Member[];
  members?: Member[];
  targetVersion?: number;
  /** The events, in order: type and key payload fields. */
  events?: [string, Record<string, unknown>?][];
  changes?: Record<string, unknown>;
  grant?: GrantToIssue | null;
  error?: { code: ErrorCode; details?: Record<string, unknown> };
}

/** What the shell does (rule.ts): read the ruling, then decide it under the policy. */
function rule(c: Case): Decided {
  const d = decision(c.decision);
  const by = c.by ?? m('u1');
  const outcome = c.outcome ?? 'approved';
  const policy: DecisionPolicy = c.policy ? resolvePolicy(c.policy) : DEFAULT_POLICY;
  const intent = { outcome, option_ids: c.option_ids, arguments: c.arguments, passkey: c.passkey ?? false };
  const reading = readRuling(d, by.user_id, intent);
  const passkey = c.passkey ? { proof, events: [registered] } : null;
  const [away, members, targetVersion] = [c.away ?? [], c.members ?? [], c.targetVersion ?? null];
  return decide(d, { by: { ...by, name: 'Una' }, outcome, note: 'why', reading, passkey, away, members, targetVersion, at: AT }, policy);
}

const two: PolicyInput = { approvals_required: 2, veto: false };
const stages: PolicyInput = {
  stages: [
    { name: 'Legal', approvers: { user_ids: ['a'] } },
    { name: 'Finance', approvers: { user_ids: ['b'] } },
  ],
};
const named: PolicyInput = { approvers: { user_ids: ['u1', 'u2'] } };
const escalating: PolicyInput = { approvers: { user_ids: ['a'] }, escalation: [{ after_seconds: 60, notify: { user_ids: ['u9'] } }] };
const resolved = (outcome: string, extra: Record<string, unknown> = {}) => ({
  status: outcome,
  resolution: expect.objectContaining({ outcome, resolved_by: 'u1', resolved_by_type: 'human', resolved_at: at, ...extra }),
});

const cases: Case[] = [
  // Quorum
  {
    name: 'quorum: the first of two approvals is recorded and leaves it pending',
    policy: two,
    events: [
      [
        'decision.approval_recorded',
        { approval: { approver_id: 'u1', name: 'Una', stage: 'approval', at }, approvals: [{ approver_id: 'u1', stage: 'approval' }] },
      ],
    ],
    changes: { approvals: [expect.objectContaining({ approver_id: 'u1', name: 'Una', at })], versions: 1 },
  },
  {
    name: 'quorum: the last approval is recorded and approves it',
    policy: two,
    decision: { approvals: [ruled('u2')] },
    events: [
      ['decision.approval_recorded', { approvals: [{ approver_id: 'u2' }, { approver_id: 'u1' }] }],
      ['decision.approved', resolved('approved')],
    ],
    changes: { ...resolved('approved', { option_ids: ['approve'], note: 'why' }), versions: 2 },
  },
  {
    name: 'quorum: a second approval by the same member is refused',
    policy: two,
    decision: { approvals: [ruled('u1')] },
    error: { code: 'already_ruled' },
  },
  {
    name: 'quorum: the default policy, one approval approves it',
    events: [['decision.approval_recorded'], ['decision.approved', { resolution: expect.objectContaining({ resolved_by_name: 'Una' }) }]],
    changes: { status: 'approved', versions: 2 },
    grant: null,
  },
  {
    name: 'quorum: one approval of three, counted towards its stage',
    policy: { approvals_required: 3 },
    decision: { approvals: [ruled('u2')] },
    events: [['decision.approval_recorded', { approvals: [{ approver_id: 'u2' }, { approver_id: 'u1' }] }]],
    changes: { versions: 1 },
  },
  // Veto
  {
    name: 'veto: a decline ends it at once, recording nothing',
    outcome: 'declined',
    events: [['decision.declined', resolved('declined')]],
    changes: { status: 'declined', versions: 1 },
  },
  {
    name: 'no veto: a decline that leaves the quorum in reach is recorded only',
    policy: two,
    outcome: 'declined',
    members: [m('u1'), m('u2'), m('u3')],
    events: [['decision.decline_recorded', { decline: { approver_id: 'u1', stage: 'approval' }, declines: [{ approver_id: 'u1' }] }]],
    changes: { declines: [expect.objectContaining({ approver_id: 'u1' })], versions: 1 },
  },
  {
    name: 'no veto: the decline that puts the quorum out of reach is recorded and declines it',
    policy: two,
    outcome: 'declined',
    members: [m('u1'), m('u2')],
    events: [['decision.decline_recorded'], ['decision.declined', resolved('declined', { option_ids: [] })]],
    changes: { status: 'declined', declines: [expect.objectContaining({ approver_id: 'u1' })], versions: 2 },
  },
  {
    name: 'no veto: who raised it does not count towards the quorum left',
    policy: two,
    decision: { createdByType: 'human', createdById: 'u3' },
    outcome: 'declined',
    members: [m('u1'), m('u2'), m('u3')],
    events: [['decision.decline_recorded'], ['decision.declined']],
  },
  {
    name: 'veto: a decline by someone no stage asks is refused',
    policy: named,
    by: m('u5'),
    outcome: 'declined',
    error: { code: 'forbidden' },
  },
  // Stages
  {
    name: 'stages: an approval before its stage is refused, naming the stage it waits at',
    policy: stages,
    by: m('b'),
    error: { code: 'forbidden', details: { stage: 'Legal' } },
  },
  {
    name: 'stages: the first stage’s approval is recorded towards it and it advances',
    policy: stages,
    by: m('a'),
    events: [['decision.approval_recorded', { approval: { approver_id: 'a', stage: 'Legal' } }]],
    changes: { versions: 1 },
  },
  {
    name: 'stages: the last stage’s approval approves it',
    policy: stages,
    by: m('b'),
    decision: { approvals: [ruled('a', 'Legal')] },
    events: [['decision.approval_recorded', { approval: { approver_id: 'b', stage: 'Finance' } }], ['decision.approved']],
    changes: { status: 'approved', versions: 2 },
  },
  {
    name: 'stages: a later stage may decline before its turn, under veto',
    policy: stages,
    by: m('b'),
    outcome: 'declined',
    events: [['decision.declined']],
  },
  // Chosen approvers
  {
    name: 'chosen approvers: a member the policy does not name is refused',
    policy: named,
    by: m('u5'),
    error: { code: 'forbidden', details: { stage: 'approval' } },
  },
  { name: 'chosen approvers: a viewer rules on nothing, even named', policy: named, by: m('u2', 'viewer'), error: { code: 'forbidden' } },
  {
    name: 'chosen approvers: a member named by id approves',
    policy: named,
    by: m('u2', 'owner'),
    events: [['decision.approval_recorded'], ['decision.approved']],
  },
  {
    name: 'who raised a decision does not approve it',
    decision: { createdByType: 'human', createdById: 'u1' },
    error: { code: 'forbidden' },
  },
  // Already ruled, not pending
  {
    name: 'not pending: a ruling on an approved decision is 409',
    decision: { status: 'approved' },
    error: { code: 'decision_not_pending', details: { status: 'approved' } },
  },
  {
    name: 'not pending: nor may it be cancelled once expired',
    decision: { status: 'expired' },
    outcome: 'cancelled',
    error: { code: 'decision_not_pending' },
  },
  {
    name: 'already ruled: who declined without veto does not approve after',
    policy: two,
    decision: { declines: [ruled('u1')] },
    error: { code: 'already_ruled' },
  },
  // Delegation
  {
    name: 'delegation: a delegate approves for a member away whom the policy asks',
    policy: named,
    by: m('d'),
    away: [m('u2')],
    events: [
      ['decision.approval_recorded', { approval: { approver_id: 'd', acting_for: 'u2' } }],
      ['decision.approved', { resolution: expect.objectContaining({ resolved_by: 'd', acting_for: 'u2' }) }],
    ],
  },
  {
    name: 'delegation: a veto decline by a delegate names whom it was for',
    policy: named,
    by: m('d'),
    away: [m('u2')],
    outcome: 'declined',
    events: [['decision.declined', { resolution: expect.objectContaining({ acting_for: 'u2' }) }]],
  },
  {
    name: 'delegation: nobody twice, the member back after their delegate ruled',
    policy: two,
    decision: { approvals: [ruled('d', 'approval', 'u1')] },
    error: { code: 'already_ruled' },
  },
  {
    name: 'delegation: nobody twice, the delegate again for the same member',
    policy: { ...named, approvals_required: 2 },
    by: m('d'),
    away: [m('u2')],
    decision: { approvals: [ruled('d', 'approval', 'u2')] },
    error: { code: 'already_ruled' },
  },
  {
    name: 'delegation: one hop, not for whom the member away holds rulings',
    policy: { approvers: { user_ids: ['c'] } },
    by: m('d'),
    away: [m('b')],
    error: { code: 'forbidden' },
  },
  {
    name: 'delegation: not for the member away who raised it',
    policy: named,
    by: m('d'),
    away: [m('u2')],
    decision: { createdByType: 'human', createdById: 'u2' },
    error: { code: 'forbidden' },
  },
  // Escalation: who may rule after a step
  { name: 'escalation: before its step, the person it names is not asked', policy: escalating, by: m('u9'), error: { code: 'forbidden' } },
  {
    name: 'escalation: after its step, the person it names approves',
    policy: escalating,
    by: m('u9'),
    decision: { escalatedSteps: 1 },
    events: [['decision.approval_recorded'], ['decision.approved']],
  },
  // Grants to issue
  {
    name: 'grant: approving an action issues a grant for its untouched target',
    decision: { action: ACTION, targetVersion: 4 },
    targetVersion: 4,
    events: [['decision.approval_recorded'], ['decision.approved', { approved_action: ACTION, approved_action_digest: digestOf(ACTION) }]],
    changes: { approvedAction: ACTION, approvedActionDigest: digestOf(ACTION) },
    grant: { passkey: false, target: { id: 'task-1', version: 4, untouched: true } },
  },
  {
    name: 'grant: a target moved on by something else is granted at the version it was raised for',
    decision: { action: ACTION, targetVersion: 4 },
    targetVersion: 6,
    grant: { passkey: false, target: { id: 'task-1', version: 4, untouched: false } },
  },
  {
    name: 'grant: an editable action approved with changed arguments is the one granted',
    decision: { action: ACTION, editable: true, targetVersion: 4 },
    arguments: { env: 'staging' },
    targetVersion: 4,
    changes: {
      approvedAction: { ...ACTION, arguments: { env: 'staging' } },
      approvedActionDigest: digestOf({ ...ACTION, arguments: { env: 'staging' } }),
    },
    grant: { passkey: false, target: { id: 'task-1', version: 4, untouched: true } },
  },
  {
    name: 'grant: none for an approval that only counts towards the quorum',
    policy: two,
    decision: { action: ACTION, targetVersion: 4 },
    targetVersion: 4,
    grant: null,
    changes: { versions: 1 },
  },
  {
    name: 'grant: none for a decline of an action',
    decision: { action: ACTION, targetVersion: 4 },
    outcome: 'declined',
    grant: null,
    events: [['decision.declined']],
  },
  {
    name: 'arguments of an action that is not editable are refused',
    decision: { action: ACTION },
    arguments: {},
    error: { code: 'validation_failed' },
  },
  // Passkeys
  {
    name: 'passkey: a decision that needs one is not approved without it',
    decision: { requirePasskey: true },
    error: { code: 'passkey_required' },
  },
  {
    name: 'passkey: its registration comes first, its proof rides on the resolution, the grant says so',
    decision: { requirePasskey: true, action: { tool: 'send', arguments: {} } },
    passkey: true,
    events: [['passkey.registered'], ['decision.approval_recorded'], ['decision.approved', { passkey: proof }]],
    grant: { passkey: true, target: null },
  },
  {
    name: 'passkey: an approval that only counts carries the proof itself',
    policy: two,
    passkey: true,
    events: [['passkey.registered'], ['decision.approval_recorded', { passkey: proof }]],
  },
  { name: 'passkey: a decline is not signed with one', outcome: 'declined', passkey: true, error: { code: 'validation_failed' } },
  // Options, decline, cancel
  {
    name: 'options: option_select chooses exactly one',
    decision: {
      shape: 'option_select',
      options: [
        { id: 'x', label: 'X' },
        { id: 'y', label: 'Y' },
      ],
    },
    option_ids: ['x', 'y'],
    error: { code: 'validation_failed' },
  },
  {
    name: 'options: the chosen option is the resolution’s',
    decision: {
      shape: 'option_select',
      options: [
        { id: 'x', label: 'X' },
        { id: 'y', label: 'Y' },
      ],
    },
    option_ids: ['y'],
    changes: { resolution: expect.objectContaining({ option_ids: ['y'] }) },
  },
  { name: 'decline: chooses no option', outcome: 'declined', option_ids: ['approve'], error: { code: 'validation_failed' } },
  {
    name: 'cancel: by who raised it, whatever the policy, recording nothing',
    policy: named,
    decision: { createdByType: 'human', createdById: 'u1', action: ACTION, targetVersion: 4 },
    outcome: 'cancelled',
    events: [['decision.cancelled', resolved('cancelled', { option_ids: [] })]],
    changes: { status: 'cancelled', versions: 1 },
    grant: null,
  },
];

describe('decide: a ruling under the decision’s policy', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_, c) => {
    if (c.error) {
      let thrown: unknown;
      try {
        rule(c);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(AppError);
      expect((thrown as AppError).code).toBe(c.error.code);
      if (c.error.details) expect((thrown as AppError).details).toMatchObject(c.error.details);
      return;
    }
    const decided = rule(c);
    if (c.events) {
      expect(decided.events.map((e) => e.eventType)).toEqual(c.events.map(([type]) => type));
      c.events.forEach(([, payload], i) => {
        expect(decided.events[i]!.aggregateId).toBe(i === 0 && c.passkey ? 'pk-1' : 'd1');
        if (payload) expect(decided.events[i]!.payload).toMatchObject(payload);
      });
    }
    if (c.changes) expect(decided.changes).toMatchObject({ updatedAt: AT, ...c.changes });
    if (c.grant !== undefined) expect(decided.grant).toEqual(c.grant);
    // A ruling that only counts leaves the decision pending; one that ends it says how.
    expect(decided.resolved).toBe(decided.changes.status ?? null);
  });
});

describe('what a ruling needs read, and the grant’s version once the approval has moved its target', () => {
  const policy = resolvePolicy(named);
  it.each([
    ['asked themselves: no delegations', m('u1'), 'approved', { away: false, members: false }],
    ['not asked: the members away who left their rulings to them', m('d'), 'approved', { away: true, members: false }],
    ['a decline without veto: the members left', m('u1'), 'declined', { away: false, members: false }],
    ['a cancel: nothing', m('d'), 'cancelled', { away: false, members: false }],
  ] as const)('%s', (_, by, outcome, needed) => {
    expect(factsNeeded(decision(), by, outcome, policy)).toEqual(needed);
  });
  it('a decline without veto reads the members', () => {
    expect(factsNeeded(decision(), m('u1'), 'declined', resolvePolicy(two))).toEqual({ away: false, members: true });
  });
  it('an untouched target moves on with each of the approval’s own events on it, a moved one does not', () => {
    const onTask = (id: string): NewEvent => ({
      aggregateType: 'task',
      aggregateId: id,
      eventType: 'task.status_changed',
      payload: {} as never,
    });
    const events = [onTask('task-1'), onTask('task-2'), onTask('task-1')];
    expect(grantTargetVersion({ passkey: false, target: { id: 'task-1', version: 4, untouched: true } }, events)).toBe(6);
    expect(grantTargetVersion({ passkey: false, target: { id: 'task-1', version: 4, untouched: false } }, events)).toBe(4);
    expect(grantTargetVersion({ passkey: false, target: null }, events)).toBeNull();
  });
});

describe('escalation and timeouts', () => {
  const created = new Date(AT.getTime() - 3600_000);
  const policy = resolvePolicy({
    escalation: [
      { after_seconds: 600, notify: { user_ids: ['u9', 'v1'] } },
      { after_seconds: 1800, notify: { roles: ['owner'] } },
      { after_seconds: 7200, notify: { roles: ['owner'] } },
    ],
  });
  const members = [m('u9'), m('v1', 'viewer'), m('o1', 'owner')];
  const row = (over: Partial<Parameters<typeof escalate>[0]> = {}) => ({
    id: 'd1',
    status: 'pending' as const,
    policy,
    createdAt: created,
    dueAt: null,
    nextEscalationAt: new Date(created.getTime() + 600_000),
    escalatedSteps: 0,
    ...over,
  });

  it('every step due is reached at once, each telling the owners and approvers it names, never a viewer', () => {
    const out = escalate(row(), members, AT);
    if (out.kind !== 'escalated') throw new Error(out.kind);
    expect(out.events.map((e) => e.payload)).toMatchObject([
      {
        step: 0,
        after_seconds: 600,
        notified: ['u9'],
        escalated_steps: 1,
        next_escalation_at: new Date(created.getTime() + 1800_000).toISOString(),
      },
      {
        step: 1,
        after_seconds: 1800,
        notified: ['o1'],
        escalated_steps: 2,
        next_escalation_at: new Date(created.getTime() + 7200_000).toISOString(),
      },
    ]);
    expect(out.changes).toEqual({
      escalatedSteps: 2,
      nextEscalationAt: new Date(created.getTime() + 7200_000),
      updatedAt: AT,
      versions: 2,
    });
    expect(out.notified).toEqual(['u9', 'o1']);
  });
  it('past the last step there is none next', () => {
    const out = escalate(
      row({ escalatedSteps: 2, nextEscalationAt: new Date(created.getTime() + 7200_000) }),
      members,
      new Date(created.getTime() + 7200_000),
    );
    expect(out).toMatchObject({ kind: 'escalated', changes: { escalatedSteps: 3, nextEscalationAt: null, versions: 1 } });
  });
  it.each([
    ['an overdue decision is timed out, not escalated', row({ dueAt: AT }), 'time_out'],
    ['a step not due yet does nothing', row({ nextEscalationAt: new Date(AT.getTime() + 1) }), 'none'],
    ['a decision already ruled on is not escalated', row({ status: 'approved' as never }), 'none'],
    ['a decision without a policy is not escalated', row({ policy: null }), 'none'],
  ])('%s', (_, r, kind) => {
    expect(escalate(r, members, AT).kind).toBe(kind);
  });
  it.each([
    [
      'on_timeout decline: declined by the system',
      'decline',
      'decision.declined',
      'Declined automatically: due_at passed without a ruling.',
    ],
    ['on_timeout expire: expired', 'expire', 'decision.expired', 'Expired: due_at passed without a ruling.'],
  ] as const)('%s', (_, onTimeout, type, note) => {
    const out = timeOut({ id: 'd1', status: 'pending', dueAt: AT, onTimeout }, AT)!;
    const status = type === 'decision.declined' ? 'declined' : 'expired';
    expect(out.events).toMatchObject([
      { aggregateId: 'd1', eventType: type, payload: { status, resolution: { resolved_by: 'system', note, resolved_at: at } } },
    ]);
    expect(out.changes).toMatchObject({ status, versions: 1, updatedAt: AT });
  });
  it('a decision not yet due, or not pending, does not time out', () => {
    expect(timeOut({ id: 'd1', status: 'pending', dueAt: new Date(AT.getTime() + 1), onTimeout: 'expire' }, AT)).toBeNull();
    expect(timeOut({ id: 'd1', status: 'approved', dueAt: AT, onTimeout: 'expire' }, AT)).toBeNull();
  });
});
