/** Runs: start, read, checkpoints, finish, and every transition of the run state machine. */
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisions, tasks } from '@/db/schema';
import { RUN_ACTIONS, type RunAction } from '@/server/domain/runs/machine';
import { loadFromTables } from '@/server/projections/state';
import { replayWorkspace } from '@/server/projections/rebuild';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const newTask = async (title = `task ${randomUUID().slice(0, 6)}`) => {
  const res = await app.request('POST', '/work', { body: { title } });
  expect(res.status).toBe(201);
  return res.body.data.taskId as string;
};
const taskStatus = async (taskId: string) => (await app.runtime.db.select().from(tasks).where(eq(tasks.id, taskId)))[0]!.status;
const getRun = async (runId: string) => {
  const res = await app.request('GET', `/runs/${runId}`);
  expect(res.status).toBe(200);
  return res.body.data;
};
const act = (runId: string, action: string, body: Record<string, unknown> = {}) =>
  app.request('POST', `/runs/${runId}/actions/${action}`, { body });

type Status = 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';

/** A fresh run in `status`, reached through the API only, with one checkpoint when it ran. */
async function runIn(status: Status): Promise<{ runId: string; taskId: string; checkpointId: string | null }> {
  const taskId = await newTask();
  const started = await app.request('POST', '/runs', { body: { task_id: taskId, agent_id: 'agent-1' } });
  expect(started.status).toBe(201);
  let runId: string = started.body.data.runId;
  const cp = await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'first', state: { step: 1 } } });
  expect(cp.status).toBe(201);
  const checkpointId: string = cp.body.data.checkpointId;
  switch (status) {
    case 'running':
      break;
    case 'paused':
      expect((await act(runId, 'pause')).status).toBe(200);
      break;
    case 'completed':
    case 'failed':
      expect((await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: status } })).status).toBe(200);
      break;
    case 'cancelled':
      expect((await act(runId, 'cancel')).status).toBe(200);
      break;
    case 'queued': {
      // A retried task gets a new, queued run.
      expect((await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'failed' } })).status).toBe(200);
      const retry = await app.request('POST', '/lifecycle', { body: { level: 'task', id: taskId, action: 'retry' } });
      expect(retry.status).toBe(200);
      runId = retry.body.runs_started[0];
      return { runId, taskId, checkpointId: null };
    }
  }
  expect((await getRun(runId)).status).toBe(status);
  return { runId, taskId, checkpointId };
}

describe('POST /runs and GET /runs/{runId}', () => {
  it('starts a running run; the task follows (in_progress); one run.created and one task event', async () => {
    const taskId = await newTask();
    const before = await app.counts();
    const res = await app.request('POST', '/runs', { body: { task_id: taskId, agent_id: 'agent-7' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      ok: true,
      data: { status: 'running', task_id: taskId, agent_id: 'agent-7', aggregateVersion: 1, checkpoints: [] },
    });
    expect(await taskStatus(taskId)).toBe('in_progress');
    const after = await app.counts();
    expect(after.runs! - before.runs!).toBe(1);
    expect(after.events! - before.events!).toBe(2);
    const read = await getRun(res.body.data.runId);
    expect(read).toEqual(res.body.data);
  });

  it('refuses a second open run of the task with 409 and its current status, writing nothing', async () => {
    const { taskId } = await runIn('paused');
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/runs', { body: { task_id: taskId } });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'invalid_state_transition', details: { status: 'paused' } });
    });
  });

  it('refuses runs of a done task', async () => {
    const { taskId } = await runIn('completed');
    expect(await taskStatus(taskId)).toBe('done');
    const res = await app.request('POST', '/runs', { body: { task_id: taskId } });
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject({ status: 'done', level: 'task' });
  });

  it('allows a new run of a failed task', async () => {
    const { taskId } = await runIn('failed');
    expect(await taskStatus(taskId)).toBe('failed');
    const res = await app.request('POST', '/runs', { body: { task_id: taskId } });
    expect(res.status).toBe(201);
    expect(await taskStatus(taskId)).toBe('in_progress');
  });

  it('answers 404 for an unknown task or run, and for another workspace’s, writing nothing', async () => {
    const other = await app.createWorkspace();
    const { runId, taskId } = await runIn('running');
    await app.expectUnchanged(async () => {
      expect((await app.request('POST', '/runs', { body: { task_id: randomUUID() } })).status).toBe(404);
      expect((await app.request('POST', '/runs', { body: { task_id: taskId }, key: other.apiKey })).status).toBe(404);
      expect((await app.request('GET', `/runs/${randomUUID()}`)).status).toBe(404);
      expect((await app.request('GET', `/runs/${runId}`, { key: other.apiKey })).status).toBe(404);
      expect((await app.request('POST', `/runs/${runId}/actions/cancel`, { body: {}, key: other.apiKey })).status).toBe(404);
      expect((await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'x' }, key: other.apiKey })).status).toBe(404);
      expect((await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'completed' }, key: other.apiKey })).status).toBe(404);
    });
    expect((await getRun(runId)).status).toBe('running');
  });

  it('validates the body: unknown fields, bad ids, bad outcome → 400, nothing written', async () => {
    const { runId, taskId } = await runIn('running');
    await app.expectUnchanged(async () => {
      expect((await app.request('POST', '/runs', { body: { task_id: 'nope' } })).status).toBe(400);
      const unknown = await app.request('POST', '/runs', { body: { task_id: taskId, status: 'completed' } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.code).toBe('unknown_field');
      expect((await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'done' } })).status).toBe(400);
      expect((await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: '' } })).status).toBe(400);
      expect((await app.request('POST', `/runs/not-a-uuid/actions/pause`, { body: {} })).status).toBe(400);
    });
  });

  it('with an Idempotency-Key replays the original run', async () => {
    const taskId = await newTask();
    const key = `run-${randomUUID()}`;
    const first = await app.request('POST', '/runs', { body: { task_id: taskId }, headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    await app.expectUnchanged(async () => {
      const again = await app.request('POST', '/runs', { body: { task_id: taskId }, headers: { 'idempotency-key': key } });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
    });
  });

  it('lets owners act and refuses approvers and viewers (403)', async () => {
    const taskId = await newTask();
    const viewer = await app.member('viewer');
    const approver = await app.member('approver');
    const owner = await app.member('owner');
    for (const m of [viewer, approver]) {
      expect((await app.request('POST', '/runs', { body: { task_id: taskId }, session: m.session })).status).toBe(403);
    }
    const res = await app.request('POST', '/runs', { body: { task_id: taskId }, session: owner.session });
    expect(res.status).toBe(201);
    expect((await app.request('GET', `/runs/${res.body.data.runId}`, { session: viewer.session })).status).toBe(200);
  });
});

describe('checkpoints and finish', () => {
  it('numbers checkpoints, keeps their state, and refuses them on a paused run', async () => {
    const { runId } = await runIn('running');
    const second = await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'second' } });
    expect(second.body.data).toMatchObject({ runId, position: 2, label: 'second', state: null });
    const run = await getRun(runId);
    expect(run.checkpoints.map((c: { label: string }) => c.label)).toEqual(['first', 'second']);
    expect(run.checkpoints[0].state).toEqual({ step: 1 });
    expect(run.aggregateVersion).toBe(3);
    await act(runId, 'pause');
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'late' } });
      expect(res.status).toBe(409);
      expect(res.body.error.details.status).toBe('paused');
    });
  });

  it('the first checkpoint of a queued run starts it', async () => {
    const { runId, taskId } = await runIn('queued');
    expect(await taskStatus(taskId)).toBe('todo');
    const res = await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'picked up' } });
    expect(res.status).toBe(201);
    expect((await getRun(runId)).status).toBe('running');
    expect(await taskStatus(taskId)).toBe('in_progress');
  });

  it('finishing completes the task; the same report again is 200 with no event; the other outcome is 409', async () => {
    const { runId, taskId } = await runIn('running');
    const done = await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'completed', summary: 'all good' } });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ status: 'completed', summary: 'all good' });
    expect(done.body.data.finished_at).toMatch(/Z$/);
    expect(await taskStatus(taskId)).toBe('done');
    await app.expectUnchanged(async () => {
      expect((await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'completed' } })).status).toBe(200);
      const other = await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'failed' } });
      expect(other.status).toBe(409);
      expect(other.body.error.details.status).toBe('completed');
    });
  });
});

describe('POST /runs/{runId}/actions/{action}: the state machine, every transition', () => {
  const statuses: Status[] = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'];
  const actions = Object.keys(RUN_ACTIONS) as RunAction[];
  // What the contract says, written out independently of the implementation's table.
  const expected: Record<RunAction, Partial<Record<Status, 'apply' | 'already'>>> = {
    pause: { queued: 'apply', running: 'apply', paused: 'already' },
    resume: { paused: 'apply', running: 'already' },
    cancel: { queued: 'apply', running: 'apply', paused: 'apply', cancelled: 'already' },
    rollback: { running: 'apply', paused: 'apply', failed: 'apply' },
  };
  const target: Record<RunAction, Status> = { pause: 'paused', resume: 'running', cancel: 'cancelled', rollback: 'paused' };
  const taskFollows: Record<Status, string> = {
    queued: 'todo',
    running: 'in_progress',
    paused: 'paused',
    completed: 'done',
    failed: 'failed',
    cancelled: 'todo',
  };

  for (const action of actions) {
    for (const from of statuses) {
      const outcome = expected[action][from] ?? 'refuse';
      it(`${action} on a ${from} run: ${outcome}`, async () => {
        const { runId, taskId, checkpointId } = await runIn(from);
        const body: Record<string, unknown> = { reason: `test ${action}` };
        if (action === 'rollback') body.checkpointId = checkpointId ?? randomUUID();
        const before = await app.counts();
        const res = await act(runId, action, body);
        const after = await app.counts();
        if (outcome === 'refuse') {
          expect(res.status).toBe(409);
          expect(res.body.error).toMatchObject({ code: 'invalid_state_transition', details: { status: from } });
          expect(after).toEqual(before);
          return;
        }
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ok: true, data: { runId, action, status: outcome === 'apply' ? target[action] : from } });
        const run = await getRun(runId);
        expect(run.status).toBe(target[action]);
        if (outcome === 'already') {
          expect(after).toEqual(before);
          return;
        }
        const taskChanged = taskFollows[from] !== taskFollows[target[action]];
        expect(after.events! - before.events!).toBe(1 + (taskChanged ? 1 : 0));
        expect(await taskStatus(taskId)).toBe(taskFollows[target[action]]);
        if (action === 'rollback') expect(run.checkpoint_id).toBe(checkpointId);
        // Applying it again is already applied: 200, nothing written.
        await app.expectUnchanged(async () => {
          const again = await act(runId, action, body);
          expect(again.status).toBe(200);
          expect(again.body.data.status).toBe(target[action]);
        });
      });
    }
  }

  it('rollback needs a checkpoint of this very run; checkpointId is refused on other actions', async () => {
    const { runId } = await runIn('running');
    const { checkpointId: foreign } = await runIn('running');
    await app.expectUnchanged(async () => {
      expect((await act(runId, 'rollback', {})).status).toBe(400);
      const other = await act(runId, 'rollback', { checkpointId: foreign });
      expect(other.status).toBe(400);
      expect(other.body.error.details.issues[0].path).toBe('checkpointId');
      expect((await act(runId, 'pause', { checkpointId: foreign })).status).toBe(400);
    });
  });

  it('an unknown action is 400 and an unknown run 404', async () => {
    const { runId } = await runIn('running');
    await app.expectUnchanged(async () => {
      const res = await act(runId, 'explode');
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect((await act(randomUUID(), 'pause')).status).toBe(404);
    });
  });

  it('cancelling a run cancels the pending decision raised on it, by the system', async () => {
    const { runId } = await runIn('running');
    const raised = await app.request('POST', '/decisions', {
      body: { workspace_id: app.ws.workspaceId, title: 'Ship it?', run_id: runId, blocks_task: true },
    });
    expect(raised.status).toBe(201);
    expect((await getRun(runId)).status).toBe('paused');
    const res = await act(runId, 'cancel', { reason: 'superseded' });
    expect(res.status).toBe(200);
    const [decision] = await app.runtime.db.select().from(decisions).where(eq(decisions.id, raised.body.decision.id));
    expect(decision!.status).toBe('cancelled');
    expect(decision!.resolution).toMatchObject({ outcome: 'cancelled', resolved_by: 'system' });
  });

  it('the tables equal the ledger replayed after all of the above', async () => {
    const replayed = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, app.ws.workspaceId));
  });
});

describe('runs and the work above them', () => {
  /** A one-task initiative (its own, so lifecycle actions touch nothing else) with a running run. */
  async function own(): Promise<{ taskId: string; milestoneId: string; runId: string }> {
    const created = await app.request('POST', '/initiatives', {
      body: { title: 'Own tree', workstreams: [{ name: 'W', milestones: [{ ref: 'm', title: 'M', tasks: [{ ref: 't', title: 'T' }] }] }] },
    });
    expect(created.status).toBe(201);
    const taskId = created.body.data.refs.t;
    const run = await app.request('POST', '/runs', { body: { task_id: taskId } });
    expect(run.status).toBe(201);
    return { taskId, milestoneId: created.body.data.refs.m, runId: run.body.data.runId };
  }
  const lifecycle = (body: Record<string, unknown>) => app.request('POST', '/lifecycle', { body });
  const runRow = async (id: string) => getRun(id);

  it('a failed run cannot be rolled back while its task has another open run', async () => {
    const { taskId, runId } = await own();
    const cp = (await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'c' } })).body.data.checkpointId;
    await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'failed' } });
    expect((await lifecycle({ level: 'task', id: taskId, action: 'retry' })).status).toBe(200);
    await app.expectUnchanged(async () => {
      const res = await act(runId, 'rollback', { checkpointId: cp });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('invalid_state_transition');
    });
  });

  it('a run under a cancelled or lifecycle-paused node cannot be resumed or reopened by a run action', async () => {
    const a = await own();
    const cp = (await app.request('POST', `/runs/${a.runId}/checkpoints`, { body: { label: 'c' } })).body.data.checkpointId;
    await app.request('POST', `/runs/${a.runId}/finish`, { body: { outcome: 'failed' } });
    expect((await lifecycle({ level: 'milestone', id: a.milestoneId, action: 'cancel' })).status).toBe(200);
    expect((await act(a.runId, 'rollback', { checkpointId: cp })).status).toBe(409);

    const b = await own();
    expect((await lifecycle({ level: 'milestone', id: b.milestoneId, action: 'pause' })).status).toBe(200);
    expect((await runRow(b.runId)).status).toBe('paused');
    await app.expectUnchanged(async () => {
      const res = await act(b.runId, 'resume');
      expect(res.status).toBe(409);
      expect(res.body.error.details).toMatchObject({ level: 'milestone', status: 'paused' });
    });
    expect((await lifecycle({ level: 'milestone', id: b.milestoneId, action: 'resume' })).status).toBe(200);
    expect((await runRow(b.runId)).status).toBe('running');
    expect(await taskStatus(b.taskId)).toBe('in_progress');
  });

  it('a declined decision ends its hold: the run stays paused on its own, the task shows paused', async () => {
    const { taskId, runId } = await own();
    const approver = await app.member('approver');
    const raised = await app.request('POST', '/decisions', {
      body: { workspace_id: app.ws.workspaceId, title: 'Go on?', run_id: runId, blocks_task: true },
    });
    expect(await taskStatus(taskId)).toBe('blocked');
    expect(
      (await app.request('POST', `/decisions/${raised.body.decision.id}/decline`, { session: approver.session, body: {} })).status,
    ).toBe(200);
    const run = await runRow(runId);
    expect(run).toMatchObject({ status: 'paused', paused_for_decision_id: null });
    expect(await taskStatus(taskId)).toBe('paused');
    // Now the run is the agent's to resume.
    expect((await act(runId, 'resume')).status).toBe(200);
    expect(await taskStatus(taskId)).toBe('in_progress');
  });

  it('approving while the work above is paused carries out no continuation; resuming the work restores the run on its own', async () => {
    const { taskId, milestoneId, runId } = await own();
    const approver = await app.member('approver');
    const raised = await app.request('POST', '/decisions', {
      body: { workspace_id: app.ws.workspaceId, title: 'Go on?', run_id: runId, blocks_task: true },
    });
    const decisionId = raised.body.decision.id;
    await app.request('POST', `/decisions/${decisionId}/attention`, { body: { continuation: { strategy: 'resume_session' } } });
    expect((await lifecycle({ level: 'milestone', id: milestoneId, action: 'pause' })).status).toBe(200);
    expect((await app.request('POST', `/decisions/${decisionId}/approve`, { session: approver.session, body: {} })).status).toBe(200);
    expect(await runRow(runId)).toMatchObject({ status: 'paused', paused_for_decision_id: null });
    expect((await lifecycle({ level: 'milestone', id: milestoneId, action: 'resume' })).status).toBe(200);
    expect(await taskStatus(taskId)).toBe('paused');
    expect((await runRow(runId)).status).toBe('paused');
    expect((await act(runId, 'resume')).status).toBe(200);
    expect(await taskStatus(taskId)).toBe('in_progress');
  });

  it('rollback after the run moved on from that checkpoint is applied again; reopening a failed run clears how it ended', async () => {
    const { runId } = await own();
    const c1 = (await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'c1' } })).body.data.checkpointId;
    expect((await act(runId, 'rollback', { checkpointId: c1 })).status).toBe(200);
    expect((await act(runId, 'resume')).status).toBe(200);
    expect((await runRow(runId)).checkpoint_id).toBeNull();
    await app.request('POST', `/runs/${runId}/checkpoints`, { body: { label: 'c2' } });
    await act(runId, 'pause');
    const before = await app.counts();
    expect((await act(runId, 'rollback', { checkpointId: c1 })).status).toBe(200);
    expect((await app.counts()).events).toBeGreaterThan(before.events!);
    await act(runId, 'resume');
    await app.request('POST', `/runs/${runId}/finish`, { body: { outcome: 'failed', summary: 'broke' } });
    expect((await act(runId, 'rollback', { checkpointId: c1 })).status).toBe(200);
    expect(await runRow(runId)).toMatchObject({ status: 'paused', finished_at: null, summary: null, checkpoint_id: c1 });
  });

  it('the tables still equal the ledger replayed', async () => {
    const replayed = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, app.ws.workspaceId));
  });
});
