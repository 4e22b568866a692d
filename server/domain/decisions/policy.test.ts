/** What a decision policy means (policy.ts): resolving, stages, reach, and replaying recorded rulings. */
import { describe, expect, it } from 'vitest';
import { policyWords } from '@/app/_lib/policy-words';
import { globMatch } from './workspace-policy';
import { canStillBeMet, currentStage, DEFAULT_POLICY, policyDigest, replay, resolvePolicy, step, type Member } from './policy';

const member = (user_id: string, role: Member['role'] = 'approver'): Member => ({ user_id, role });
const ruling = (approver_id: string, stage = 'approval') => ({ approver_id, name: null, stage, at: '2026-11-28T00:00:00.000Z' });

describe('resolvePolicy', () => {
  it('the empty policy is the default, and means one digest however it is written', () => {
    expect(resolvePolicy({})).toEqual(DEFAULT_POLICY);
    const a = resolvePolicy({
      approvers: { roles: ['approver', 'owner'] },
      escalation: [{ after_seconds: 60, notify: { roles: ['owner'] } }],
    });
    const b = resolvePolicy({
      approvers: { roles: ['owner', 'approver'], user_ids: [] },
      veto: true,
      escalation: [{ after_seconds: 60, notify: { roles: ['owner'] } }],
    });
    expect(policyDigest(a)).toBe(policyDigest(b));
  });

  it('stages take the top-level quorum and approvers unless they name their own; escalation in time order', () => {
    const p = resolvePolicy({
      approvals_required: 2,
      approvers: { user_ids: ['u1', 'u1', 'u2'] },
      stages: [{ name: 'Finance' }, { name: 'Security', approvals_required: 1, approvers: { roles: ['owner'] } }],
      escalation: [
        { after_seconds: 7200, notify: { roles: ['owner'] } },
        { after_seconds: 60, notify: { user_ids: ['u9'] } },
      ],
    });
    expect(p.stages).toEqual([
      { name: 'Finance', approvals_required: 2, approvers: { roles: [], user_ids: ['u1', 'u2'] } },
      { name: 'Security', approvals_required: 1, approvers: { roles: ['owner'], user_ids: [] } },
    ]);
    expect(p.escalation.map((e) => e.after_seconds)).toEqual([60, 7200]);
  });
});

describe('step and reach', () => {
  const policy = resolvePolicy({
    stages: [
      { name: 'A', approvers: { user_ids: ['a'] } },
      { name: 'B', approvers: { user_ids: ['b'] } },
    ],
  });
  const context = { members: [member('a'), member('b')], raisedBy: null, escalated: 0 };

  it('a later stage’s approver may not approve yet, but may decline; nobody rules twice; a viewer never rules', () => {
    const none = { approvals: [], declines: [] };
    expect(step(policy, none, { member: member('b'), name: null, at: '' }, 'approved', context)).toMatchObject({ refused: 'not_allowed' });
    expect(step(policy, none, { member: member('b'), name: null, at: '' }, 'declined', context)).toMatchObject({
      refused: null,
      ends: 'declined',
    });
    const afterA = { approvals: [ruling('a', 'A')], declines: [] };
    expect(currentStage(policy, afterA.approvals)).toBe(1);
    expect(step(policy, afterA, { member: member('a'), name: null, at: '' }, 'approved', context)).toMatchObject({
      refused: 'already_ruled',
    });
    expect(step(policy, afterA, { member: member('b'), name: null, at: '' }, 'approved', context)).toMatchObject({ ends: 'approved' });
    expect(step(policy, none, { member: member('a', 'viewer'), name: null, at: '' }, 'approved', context)).toMatchObject({
      refused: 'not_allowed',
    });
  });

  it('escalation lets the people it names approve at the stage the decision waits at, once reached', () => {
    const escalating = resolvePolicy({
      approvers: { user_ids: ['a'] },
      escalation: [{ after_seconds: 60, notify: { user_ids: ['lead'] } }],
    });
    const lead = { member: member('lead'), name: null, at: '' };
    const none = { approvals: [], declines: [] };
    expect(step(escalating, none, lead, 'approved', { ...context, escalated: 0 })).toMatchObject({ refused: 'not_allowed' });
    expect(step(escalating, none, lead, 'approved', { ...context, escalated: 1 })).toMatchObject({ ends: 'approved' });
  });

  it('a delegate rules as the member away: recorded acting_for, and neither of them rules again', () => {
    const onlyA = resolvePolicy({ approvals_required: 2, approvers: { user_ids: ['a', 'c'] } });
    const none = { approvals: [], declines: [] };
    const forA = step(onlyA, none, { member: member('a'), approverId: 'd', name: 'Dee', at: 't' }, 'approved', context);
    expect(forA).toMatchObject({ refused: null, recorded: { approver_id: 'd', acting_for: 'a', name: 'Dee' }, ends: null });
    const after = { approvals: [(forA as { recorded: ReturnType<typeof ruling> }).recorded], declines: [] };
    expect(step(onlyA, after, { member: member('a'), name: null, at: '' }, 'approved', context)).toMatchObject({
      refused: 'already_ruled',
    });
    expect(step(onlyA, after, { member: member('c'), approverId: 'd', name: null, at: '' }, 'approved', context)).toMatchObject({
      refused: 'already_ruled',
    });
  });

  it('canStillBeMet matches people to the approvals still missing, one approval each', () => {
    // Two stages of one approval each, both open to a and b: a and b can meet them; a alone cannot.
    const twoOfSame = resolvePolicy({ stages: [{ name: 'X' }, { name: 'Y' }], approvers: { user_ids: ['a', 'b'] } });
    expect(canStillBeMet(twoOfSame, [], [member('a'), member('b')])).toBe(true);
    expect(canStillBeMet(twoOfSame, [], [member('a')])).toBe(false);
    // X open to a or b, Y to a only: b must take X so that a can take Y (an augmenting path).
    const crossed = resolvePolicy({
      stages: [
        { name: 'X', approvers: { user_ids: ['a', 'b'] } },
        { name: 'Y', approvers: { user_ids: ['a'] } },
      ],
    });
    expect(canStillBeMet(crossed, [], [member('a'), member('b')])).toBe(true);
    expect(canStillBeMet(crossed, [ruling('a', 'X')], [member('b')])).toBe(false);
  });
});

describe('replay', () => {
  const members = [member('a'), member('b'), member('c'), member('o', 'owner')];
  it('recorded rulings under another policy: met, declined, or not enough', () => {
    const two = resolvePolicy({ approvals_required: 2 });
    expect(replay(two, [{ user_id: 'a', outcome: 'approved' }], members, null)).toBe('pending');
    expect(
      replay(
        two,
        [
          { user_id: 'a', outcome: 'approved' },
          { user_id: 'b', outcome: 'approved' },
        ],
        members,
        null,
      ),
    ).toBe('approved');
    expect(replay(two, [{ user_id: 'a', outcome: 'declined' }], members, null)).toBe('declined');
    const noVeto = resolvePolicy({ approvals_required: 2, veto: false, approvers: { user_ids: ['a', 'b', 'c'] } });
    expect(replay(noVeto, [{ user_id: 'a', outcome: 'declined' }], members, null)).toBe('pending');
    expect(
      replay(
        noVeto,
        [
          { user_id: 'a', outcome: 'declined' },
          { user_id: 'b', outcome: 'declined' },
        ],
        members,
        null,
      ),
    ).toBe('declined');
    // Whoever raised it, and people the policy does not ask, are skipped as they would have been refused.
    const onlyOwner = resolvePolicy({ approvers: { roles: ['owner'] } });
    expect(replay(onlyOwner, [{ user_id: 'a', outcome: 'approved' }], members, null)).toBe('pending');
    expect(replay(onlyOwner, [{ user_id: 'o', outcome: 'approved' }], members, 'o')).toBe('pending');
    expect(replay(onlyOwner, [{ user_id: 'o', outcome: 'approved' }], members, null)).toBe('approved');
  });
});

describe('replay, in any order', () => {
  it('an approval given before its stage came counts once the stage before it has passed', () => {
    const legalThenFinance = resolvePolicy({
      stages: [
        { name: 'Legal', approvers: { user_ids: ['l'] } },
        { name: 'Finance', approvers: { user_ids: ['f'] } },
      ],
    });
    const members = [member('l'), member('f')];
    const rulings = [
      { user_id: 'f', outcome: 'approved' as const },
      { user_id: 'l', outcome: 'approved' as const },
    ];
    expect(replay(legalThenFinance, rulings, members, null)).toBe('approved');
    expect(replay(legalThenFinance, rulings.slice(0, 1), members, null)).toBe('pending');
  });
});

describe('globMatch', () => {
  it('* is any run of characters, ? any one, the rest itself', () => {
    expect(globMatch('payments.*', 'payments.send')).toBe(true);
    expect(globMatch('payments.*', 'payments.')).toBe(true);
    expect(globMatch('payments.*', 'paymentsXsend')).toBe(false);
    expect(globMatch('*', 'mcp/github/merge')).toBe(true);
    expect(globMatch('deploy.prod-?', 'deploy.prod-2')).toBe(true);
    expect(globMatch('deploy.prod-?', 'deploy.prod-12')).toBe(false);
    expect(globMatch('*.send', 'payments.send')).toBe(true);
    expect(globMatch('a*b*c', 'aXXbYYc')).toBe(true);
    expect(globMatch('a*b*c', 'aXXbYY')).toBe(false);
    expect(globMatch('exact', 'exact')).toBe(true);
    expect(globMatch('exact', 'exactly')).toBe(false);
  });

  it('answers a pattern that makes a regular expression backtrack for ever, at once', () => {
    // picomatch took 9 s on this one; the walk takes at most length × length steps.
    expect(globMatch(`${'*a'.repeat(60)}b`, 'a'.repeat(200))).toBe(false);
    expect(globMatch(`${'*a'.repeat(60)}*`, 'a'.repeat(200))).toBe(true);
  });
});

describe('policyWords', () => {
  it('says a policy the way the decision page shows it', () => {
    expect(policyWords(DEFAULT_POLICY, {})).toBe('1 approval from any owner or approver');
    const staged = resolvePolicy({
      stages: [
        { name: 'Finance', approvals_required: 2, approvers: { user_ids: ['ann', 'bob'] } },
        { name: 'Security', approvers: { roles: ['owner'] } },
      ],
      escalation: [{ after_seconds: 3600, notify: { user_ids: ['lead'] } }],
    });
    expect(policyWords(staged, { ann: 'Ann', bob: 'Bob', lead: 'the on-call lead' })).toBe(
      '2 approvals from Finance (Ann or Bob), then 1 from Security (any owner); any decline declines; after 1 hour unruled, escalates to the on-call lead',
    );
  });
});
