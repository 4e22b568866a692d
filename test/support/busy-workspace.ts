/**
 * A busy workspace: a new workspace in which every kind of ledger event a client can cause is
 * recorded at least once, and every projection table has rows, for tests that need a ledger with
 * everything in it (replay against the tables, export and verify, rebuild, the operating map, the
 * event stream, retention). It is made the way clients make it, every call's status asserted:
 *
 * - the agents' side through REST (`app.request`, the workspace's own API key): work, initiatives,
 *   task patches, runs and their actions, lifecycle actions, decisions and attention, receipt
 *   imports, duplicate-trigger claims;
 * - humans with sessions (`app.member`): rulings by an approver over REST, a cancellation by an owner;
 * - people and API keys through the web interface's own endpoint (`internalClient`, /api/trpc as a
 *   browser calls it): they are not published as REST, so no API key can reach them.
 *
 * Event types it produces (and the step that does): workspace.created, membership.created,
 * initiative.created, workstream.created, milestone.created, api_key.created (createWorkspace and
 * app.member); work.created (1); initiative/workstream/milestone/task.created (2); task.updated (3);
 * run.created, run.checkpointed, run.completed, task.status_changed (4); initiative/workstream/
 * milestone/task/run.paused and .resumed (5); run.rolled_back (6); run.failed, task.redispatched,
 * run.started (7); decision.created, decision.attention_requested, decision.approved,
 * decision.declined, decision.cancelled, run.released (8); initiative/workstream/milestone/
 * task.cancelled and .reopened, run.cancelled (9); receipt.imported (10); dedup.claimed,
 * dedup.extended, dedup.released (11); invitation.created, invitation.revoked, invitation.accepted,
 * membership.role_changed, membership.removed (12); api_key.revoked (13).
 *
 * Not produced: decision.expired (only the decision timeout sweep writes it), dedup.pruned (only the
 * retention job) and webhook_endpoint.* (no webhook endpoints, so the workspace queues no deliveries).
 *
 * Where it ends: 3 Inbox tasks (one paused by its rolled-back run, one done, one patched and still
 * todo), an initiative of 2 workstreams, 3 milestones and 4 tasks (2 done, 2 todo), a second
 * initiative cancelled and retried (its 2 tasks todo, one with a queued run, one whose run was
 * cancelled), one decision pending with attention and three ruled, an imported receipt, one claim
 * held and one released, a revoked invitation, a revoked key, a removed member.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { sampleReceipt } from '@/server/domain/receipts/sample';
import type { ApiResponse, TestApp, TestMember, TestWorkspace } from './app';
import { internalClient } from './internal';

export interface BusyWorkspace {
  ws: TestWorkspace;
  /** A second owner, signed in: cancelled a decision, manages people and keys. */
  owner: TestMember;
  /** An approver, signed in: ruled on two decisions. */
  approver: TestMember;
  /** The three POST /work tasks (in the Inbox), in order: paused (run rolled back), done, patched. */
  workTaskIds: string[];
  /** Their receipts, in the same order. */
  receiptIds: string[];
  /** The initiative with its whole tree (paused and resumed once). */
  initiativeId: string;
  /** Its nodes' ids by ref: research, build, m-interviews, m-beta, m-ga, recruit, interview, api, docs. */
  refs: Record<string, string>;
  /** The initiative cancelled and then retried (reopened, its tasks re-dispatched). */
  retriedInitiativeId: string;
  /** Its nodes' ids by ref: wind-down, m-switch-off, redirect, archive. */
  retriedRefs: Record<string, string>;
  /** Every task of the workspace made here (Inbox ones first). */
  taskIds: string[];
  /** The runs, by what happened to them. */
  runs: {
    /** recruit: two checkpoints, completed. */
    completed: string;
    /** interview: paused and resumed with its initiative, held by a declined decision, resumed, completed. */
    released: string;
    /** Inbox task 1: paused, rolled back to its first checkpoint; still paused. */
    paused: string;
    /** Inbox task 2: failed. */
    failed: string;
    /** Inbox task 2 again (its retry): started by a checkpoint, held by an approved decision, completed. */
    retried: string;
    /** redirect: queued by the retry of its initiative. */
    queued: string;
    /** archive: queued by the same retry, then cancelled. */
    cancelled: string;
  };
  /** Every run id, in the order started. */
  runIds: string[];
  /** The first checkpoint of `runs.paused` (where it was rolled back to). */
  checkpointId: string;
  decisions: {
    /** Blocked `runs.retried`; attention with resume_session; approved by the approver. */
    approved: string;
    /** Blocked `runs.released`; declined by the approver (the hold ended: run.released). */
    declined: string;
    /** About the api task, not blocking; cancelled by the owner. */
    cancelled: string;
    /** About Inbox task 3, with its own options and a due date 30 days out; attention asked twice. */
    pending: string;
  };
  decisionIds: string[];
  /** The imported (foreign) agent-work-receipt document's receipt_id. */
  importedReceiptId: string;
  /** Duplicate-trigger claims: one held (claimed, extended) and one released. */
  claims: {
    held: { source: string; event_key: string; run_id: string; fingerprint_hash: string };
    released: { source: string; event_key: string; initiative_id: string; run_id: string; fingerprint_hash: string };
  };
  /** The second API key (used once, then revoked). */
  revokedApiKeyId: string;
  invitations: { revoked: string; accepted: string };
  /** Who joined through the accepted invitation (an approver). */
  joinedUserId: string;
  /** The member whose role was changed and who was then removed. */
  removedUserId: string;
}

/** The initiative with its whole tree: depends_on between workstreams and between sibling tasks. */
const launchBody = {
  title: 'Launch the EU site',
  summary: 'Everything between a green build and a public page.',
  execution_policy: { mode: 'parallel', max_concurrent_agents: 2 },
  workstreams: [
    {
      ref: 'research',
      name: 'Research',
      goal: 'Know the market',
      domain: 'research',
      agent_id: 'scout',
      milestones: [
        {
          ref: 'm-interviews',
          title: 'Interviews done',
          tasks: [
            { ref: 'recruit', title: 'Recruit ten customers', type: 'research', estimate_hours: 3 },
            { ref: 'interview', title: 'Run interviews', type: 'research', estimate_hours: 10, depends_on: ['recruit'], agent_id: 'scout' },
          ],
        },
      ],
    },
    {
      ref: 'build',
      name: 'Build',
      domain: 'engineering',
      depends_on: ['research'],
      milestones: [
        {
          ref: 'm-beta',
          title: 'Beta',
          tasks: [
            { ref: 'api', title: 'API', priority: 'high', estimate_hours: 20, agent_id: 'coder' },
            { ref: 'docs', title: 'API docs', type: 'review', estimate_hours: 4, depends_on: ['api'] },
          ],
        },
        { ref: 'm-ga', title: 'GA', tasks: [] },
      ],
    },
  ],
};

/** A second, smaller initiative: cancelled and retried whole. */
const retireBody = {
  title: 'Retire the old site',
  workstreams: [
    {
      ref: 'wind-down',
      name: 'Wind-down',
      milestones: [
        {
          ref: 'm-switch-off',
          title: 'Switch-off',
          tasks: [
            { ref: 'redirect', title: 'Redirect old URLs', type: 'ops', agent_id: 'ops-bot' },
            { ref: 'archive', title: 'Archive content', type: 'ops', depends_on: ['redirect'] },
          ],
        },
      ],
    },
  ],
};

export async function buildBusyWorkspace(app: TestApp): Promise<BusyWorkspace> {
  const ws = await app.createWorkspace();
  const api = internalClient(app.runtime);

  /** One REST call in the busy workspace (its API key unless a session is given), its status asserted. */
  const call = async (
    method: string,
    path: string,
    status: number,
    opts: { body?: unknown; session?: string; key?: string | null; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse> => {
    const res = await app.request(method, path, { key: ws.apiKey, ...opts });
    expect(res.status, `${method} ${path} → ${res.text}`).toBe(status);
    return res;
  };
  /** One call to the web interface's endpoint as `who` (a signed-in owner), 200 asserted. */
  const mutate = async (path: string, input: Record<string, unknown>, who: { session?: string; address?: string }) => {
    const res = await api.mutate(path, { workspace_id: ws.workspaceId, ...input }, who);
    expect(res.status, `${path} → ${JSON.stringify(res.body)}`).toBe(200);
    return res.data;
  };
  const start = async (taskId: string, agentId: string) =>
    (await call('POST', '/runs', 201, { body: { task_id: taskId, agent_id: agentId } })).body.data.runId as string;
  const checkpoint = async (runId: string, label: string, state?: Record<string, unknown>) =>
    (await call('POST', `/runs/${runId}/checkpoints`, 201, { body: { label, ...(state ? { state } : {}) } })).body.data
      .checkpointId as string;
  const act = (runId: string, action: string, body: Record<string, unknown> = {}) =>
    call('POST', `/runs/${runId}/actions/${action}`, 200, { body });
  const finish = (runId: string, outcome: 'completed' | 'failed', summary: string) =>
    call('POST', `/runs/${runId}/finish`, 200, { body: { outcome, summary } });
  const lifecycle = async (level: string, id: string, action: string, reason?: string) =>
    (await call('POST', '/lifecycle', 200, { body: { level, id, action, ...(reason ? { reason } : {}) } })).body;
  const raise = async (body: Record<string, unknown>) =>
    (await call('POST', '/decisions', 201, { body: { workspace_id: ws.workspaceId, ...body } })).body.decision.id as string;

  // The people: an approver to rule, and a second owner for what only owners do (cancel a decision,
  // invite, change roles, manage keys). Each is a membership.created.
  const approver = await app.member('approver', ws.workspaceId);
  const owner = await app.member('owner', ws.workspaceId);

  // ---- 1. Work: three POST /work, each with an Idempotency-Key (work.created each) ----------------
  // The first key sent again replays the original answer (200, duplicate) and writes nothing.
  const workBodies = [
    { title: 'Draft the launch plan', priority: 'high', estimate_hours: 2 },
    { title: 'Summarise the interviews', description: 'Ten interviews, one page.' },
    { title: 'Book the launch venue', description: 'Somewhere central.', priority: 'low', estimate_hours: 1 },
  ];
  const workTaskIds: string[] = [];
  const receiptIds: string[] = [];
  for (const [i, body] of workBodies.entries()) {
    const res = await call('POST', '/work', 201, { body, headers: { 'Idempotency-Key': `busy-work-${i + 1}` } });
    workTaskIds.push(res.body.data.taskId);
    receiptIds.push(res.body.data.receiptId);
  }
  const replay = await call('POST', '/work', 200, { body: workBodies[0], headers: { 'Idempotency-Key': 'busy-work-1' } });
  expect(replay.body.data).toMatchObject({ taskId: workTaskIds[0], duplicate: true });
  const [planTask, summaryTask, venueTask] = workTaskIds as [string, string, string];

  // ---- 2. Two initiatives, each with its whole tree (one *.created event per node) ---------------
  const launch = await call('POST', '/initiatives', 201, { body: launchBody });
  const initiativeId: string = launch.body.data.initiative.id;
  const refs: Record<string, string> = launch.body.data.refs;
  const retire = await call('POST', '/initiatives', 201, { body: retireBody });
  const retriedInitiativeId: string = retire.body.data.initiative.id;
  const retriedRefs: Record<string, string> = retire.body.data.refs;

  // ---- 3. A merge patch of one task, guarded by If-Match (task.updated) --------------------------
  // Sets the title, priority, estimate and agent, and clears the description.
  const patched = await call('PATCH', `/tasks/${venueTask}`, 200, {
    body: { title: 'Book the launch venue and catering', priority: 'medium', estimate_hours: 3, agent_id: 'planner', description: null },
    headers: { 'If-Match': '"1"' },
  });
  expect(patched.body.data.changed.sort()).toEqual(['agent_id', 'description', 'estimate_hours', 'priority', 'title']);

  // ---- 4. A run of a ready task: checkpointed twice, completed -----------------------------------
  // recruit has no dependency, so it is ready; interview waits for it. The task follows its run
  // (task.status_changed: in_progress, then done).
  const ready = await call('GET', `/tasks?ready=true&initiative_id=${initiativeId}&limit=100`, 200);
  const readyIds = ready.body.data.map((t: { id: string }) => t.id);
  expect(readyIds).toContain(refs.recruit);
  expect(readyIds).not.toContain(refs.interview);
  const completedRun = await start(refs.recruit!, 'scout');
  await checkpoint(completedRun, 'sources found', { candidates: 14 });
  await checkpoint(completedRun, 'shortlist', { invited: 10 });
  await finish(completedRun, 'completed', 'Ten customers booked');

  // ---- 5. A lifecycle pause and resume of the initiative, with a run in it -----------------------
  // interview is ready now; its run is running when the initiative pauses, so the cascade pauses
  // the initiative, its workstreams, milestones, open tasks and that run (*.paused), and the resume
  // restores exactly those (*.resumed).
  const interviewRun = await start(refs.interview!, 'scout');
  await checkpoint(interviewRun, 'first five done');
  const paused = await lifecycle('initiative', initiativeId, 'pause', 'waiting for the budget');
  expect(paused.affected.runsPaused).toBe(1);
  const resumed = await lifecycle('initiative', initiativeId, 'resume');
  expect(resumed.affected.nodes).toBe(paused.affected.nodes);

  // ---- 6. Another run: paused, rolled back to its first checkpoint, left paused ------------------
  const pausedRun = await start(planTask, 'planner');
  const checkpointId = await checkpoint(pausedRun, 'outline', { sections: 3 });
  await checkpoint(pausedRun, 'draft', { sections: 3, words: 1200 });
  await act(pausedRun, 'pause', { reason: 'waiting for figures' });
  const rolledBack = await act(pausedRun, 'rollback', { checkpointId });
  expect(rolledBack.body.data.status).toBe('paused');

  // ---- 7. A failed run, retried: task.redispatched, a queued run that its checkpoint starts -----
  const failedRun = await start(summaryTask, 'scribe');
  await finish(failedRun, 'failed', 'Transcripts missing');
  const retry = await lifecycle('run', failedRun, 'retry', 'transcripts are in');
  const retriedRun: string = retry.runs_started[0];
  await checkpoint(retriedRun, 'transcripts read'); // run.started: queued → running

  // ---- 8. Decisions: raised by the agent's key, ruled by humans ----------------------------------
  // approved: blocks the running retried run (run.paused, task blocked); attention with the
  // resume_session continuation; the approver approves and the run resumes (run.resumed).
  const approved = await raise({
    title: 'Publish the interview summary?',
    urgency: 'critical',
    task_id: summaryTask,
    run_id: retriedRun,
    blocks_task: true,
  });
  await call('POST', `/decisions/${approved}/attention`, 200, {
    body: { recommended_option_id: 'approve', impact_if_delayed: 'the launch plan waits', continuation: { strategy: 'resume_session' } },
  });
  const approval = await call('POST', `/decisions/${approved}/approve`, 200, { session: approver.session, body: { note: 'Go ahead.' } });
  expect(approval.body.decision.status).toBe('approved');
  await finish(retriedRun, 'completed', 'Summary published');

  // declined: blocks the interview run; declining ends the hold (run.released: the run stays paused
  // on its own), then the agent resumes it and completes it.
  const declined = await raise({
    title: 'Pay for a survey panel?',
    shape: 'budget_approval',
    urgency: 'standard',
    run_id: interviewRun,
    blocks_task: true,
    shape_context: {
      options: [
        { id: 'panel', label: 'Buy the panel', description: '€2,000' },
        { id: 'none', label: 'Interview only' },
      ],
    },
  });
  const decline = await call('POST', `/decisions/${declined}/decline`, 200, {
    session: approver.session,
    body: { note: 'Interviews are enough.' },
  });
  expect(decline.body.decision.status).toBe('declined');
  await act(interviewRun, 'resume');
  await finish(interviewRun, 'completed', 'Ten interviews done');

  // cancelled: about the api task, not blocking; an owner withdraws it.
  const cancelled = await raise({ title: 'Split the API work in two?', urgency: 'deferred', task_id: refs.api });
  await call('POST', `/decisions/${cancelled}/cancel`, 200, { session: owner.session, body: { note: 'Not needed any more.' } });

  // pending: with options and a due date far ahead (no timeout fires); attention asked twice.
  const pending = await raise({
    title: 'Pick the launch date',
    description: 'The venue holds both dates until Friday.',
    shape: 'option_select',
    task_id: venueTask,
    due_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    on_timeout: 'decline',
    shape_context: {
      options: [
        { id: 'mar-3', label: '3 March' },
        { id: 'mar-10', label: '10 March' },
      ],
    },
  });
  await call('POST', `/decisions/${pending}/attention`, 200, {
    body: { recommended_option_id: 'mar-10', recommendation_note: 'More time' },
  });
  await call('POST', `/decisions/${pending}/attention`, 200, { body: { impact_if_delayed: 'the venue lets the dates go' } });

  // ---- 9. The second initiative: cancelled whole, then retried -----------------------------------
  // cancel: initiative, workstream, milestone and both tasks *.cancelled; retry: the containers
  // *.reopened, each task task.redispatched with a new queued run (run.created). One of those runs is
  // cancelled (run.cancelled), the other left queued.
  await lifecycle('initiative', retriedInitiativeId, 'cancel', 'the old site stays a while');
  const reopened = await lifecycle('initiative', retriedInitiativeId, 'retry', 'the old site goes after all');
  expect(reopened.runs_started).toHaveLength(2);
  const runOf = async (taskId: string) => {
    const res = await call('GET', `/runs?task_id=${taskId}&limit=10`, 200);
    return res.body.data[0].runId as string;
  };
  const queuedRun = await runOf(retriedRefs.redirect!);
  const cancelledRun = await runOf(retriedRefs.archive!);
  await act(cancelledRun, 'cancel', { reason: 'archived by hand' });

  // ---- 10. A receipt imported from elsewhere (receipt.imported); the same document again is a
  // duplicate and writes nothing. A foreign document (not this workspace's own export): imported
  // under an id of one of this workspace's receipts, GET /receipts/{id} would answer with the native
  // receipt, and the imported copy could not be read back.
  const document = sampleReceipt();
  const importedReceiptId = document.receipt_id as string;
  await call('POST', '/agent-work-receipts/import', 201, { body: document });
  const again = await call('POST', '/agent-work-receipts/import', 200, { body: document });
  expect(again.body.data.duplicate).toBe(true);
  expect((await call('GET', `/receipts/${importedReceiptId}`, 200)).body).toEqual(document);

  // ---- 11. Duplicate-trigger claims ----------------------------------------------------------------
  // held: claimed (dedup.claimed), re-claimed by its holder for longer (dedup.extended); another run
  // claiming it is told to stand down (no event).
  // Each claimant holds by the id its first claim generated (a run_id must be the workspace's).
  const signal = { source: 'github-webhook', event_key: 'delivery-72d1' };
  const claimed = await call('POST', '/live/dedup/claim', 200, { body: { ...signal, ttl_seconds: 3600 } });
  expect(claimed.body).toMatchObject({ claimed: true, deduped: false });
  const held = { ...signal, run_id: claimed.body.active_run_id as string };
  await call('POST', '/live/dedup/claim', 200, { body: { ...held, ttl_seconds: 7200 } });
  const standDown = await call('POST', '/live/dedup/claim', 200, { body: signal });
  expect(standDown.body).toMatchObject({ claimed: false, deduped: true, active_run_id: held.run_id });
  // released: scoped to the initiative, claimed and released by its holder (dedup.released).
  const scoped = { source: 'cron', event_key: 'nightly/2026-11-26', initiative_id: initiativeId };
  const freedClaim = await call('POST', '/live/dedup/claim', 200, { body: scoped });
  const freed = { ...scoped, run_id: freedClaim.body.active_run_id as string };
  const release = await call('POST', '/live/dedup/release', 200, { body: freed });
  expect(release.body).toMatchObject({ released: true });

  // ---- 12. People, through the web interface (owners only) ---------------------------------------
  // An invitation revoked (invitation.created, invitation.revoked); another accepted by someone new
  // (invitation.created, membership.created, invitation.accepted); a member whose role is changed
  // and who is then removed (membership.created, membership.role_changed, membership.removed).
  // Mail is not configured in tests: the link comes back in the answer.
  const tag = randomUUID().slice(0, 8);
  const toRevoke = await mutate('members.invite', { email: `revoked-${tag}@test.local`, role: 'viewer' }, owner);
  expect(await mutate('members.revokeInvitation', { invitation_id: toRevoke.invitation.id }, owner)).toEqual({ revoked: true });
  const toAccept = await mutate('members.invite', { email: `joiner-${tag}@test.local`, role: 'approver' }, owner);
  const token = new URL(toAccept.link).pathname.split('/').pop()!;
  // Invitation links are limited per client address: an address of its own.
  const joined = await api.mutate(
    'account.joinWithInvitation',
    { token, display_name: 'Jo Joiner', password: 'a long enough password' },
    { address: `10.77.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}` },
  );
  expect(joined.status, JSON.stringify(joined.body)).toBe(200);
  const people = await api.query('members.list', { workspace_id: ws.workspaceId }, owner);
  expect(people.status, JSON.stringify(people.body)).toBe(200);
  const joiner = people.data.members.find((m: { email: string }) => m.email === `joiner-${tag}@test.local`);
  expect(joiner?.role).toBe('approver');
  const joinedUserId: string = joiner.user_id;
  const leaver = await app.member('viewer', ws.workspaceId);
  expect(await mutate('members.changeRole', { user_id: leaver.userId, role: 'approver' }, owner)).toEqual({
    changed: true,
    revokedKeys: 0,
  });
  await mutate('members.remove', { user_id: leaver.userId }, owner);

  // ---- 13. A second API key: created, used once, revoked (api_key.created, api_key.revoked) -------
  const key = await mutate('apiKeys.create', { name: 'busy second key' }, owner);
  await call('POST', '/live/dedup/claim', 200, { key: key.secret, body: { source: 'deploy-hook', event_key: 'deploy-418' } });
  await mutate('apiKeys.revoke', { key_id: key.id }, owner);
  await call('GET', '/workspace', 401, { key: key.secret });

  const taskIds = [
    ...workTaskIds,
    ...['recruit', 'interview', 'api', 'docs'].map((ref) => refs[ref]!),
    ...['redirect', 'archive'].map((ref) => retriedRefs[ref]!),
  ];
  return {
    ws,
    owner,
    approver,
    workTaskIds,
    receiptIds,
    initiativeId,
    refs,
    retriedInitiativeId,
    retriedRefs,
    taskIds,
    runs: {
      completed: completedRun,
      released: interviewRun,
      paused: pausedRun,
      failed: failedRun,
      retried: retriedRun,
      queued: queuedRun,
      cancelled: cancelledRun,
    },
    runIds: [completedRun, interviewRun, pausedRun, failedRun, retriedRun, queuedRun, cancelledRun],
    checkpointId,
    decisions: { approved, declined, cancelled, pending },
    decisionIds: [approved, declined, cancelled, pending],
    importedReceiptId,
    claims: {
      held: { ...held, fingerprint_hash: claimed.body.fingerprint_hash },
      released: { ...freed, fingerprint_hash: freedClaim.body.fingerprint_hash },
    },
    revokedApiKeyId: key.id,
    invitations: { revoked: toRevoke.invitation.id, accepted: toAccept.invitation.id },
    joinedUserId,
    removedUserId: leaver.userId,
  };
}
