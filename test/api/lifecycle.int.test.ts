/**
 * POST /lifecycle over a tree of 3 workstreams × 2 milestones × 3 tasks with runs in every state:
 * the cascades, their counts, resume restoring exactly what its pause changed, dry runs, and the
 * refusals. The steps build on each other, in order.
 */
import { randomUUID } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisions, initiatives, milestones, runs, tasks, workstreams } from '@/db/schema';
import { loadFromTables } from '@/server/projections/state';
import { replayWorkspace } from '@/server/projections/rebuild';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
const W = [0, 1, 2];
const M = [0, 1];
const T = [0, 1, 2];
const ref = (w: number, m?: number, t?: number) => `w${w}${m === undefined ? '' : `m${m}`}${t === undefined ? '' : `t${t}`}`;
let ids: Record<string, string>;
let initiativeId: string;
const runOf: Record<string, string> = {};
let heldDecision: string;

const lifecycle = (body: Record<string, unknown>) => app.request('POST', '/lifecycle', { body });

async function snapshot(): Promise<Record<string, string>> {
  const db = app.runtime.db;
  const out: Record<string, string> = {};
  const [i] = await db.select().from(initiatives).where(eq(initiatives.id, initiativeId));
  out.initiative = i!.status;
  const byId = new Map<string, string>();
  for (const r of await db.select().from(workstreams).where(eq(workstreams.initiativeId, initiativeId))) byId.set(r.id, r.status);
  for (const r of await db
    .select()
    .from(milestones)
    .where(
      inArray(
        milestones.workstreamId,
        W.map((w) => ids[ref(w)]!),
      ),
    ))
    byId.set(r.id, r.status);
  for (const r of await db.select().from(tasks).where(eq(tasks.initiativeId, initiativeId))) byId.set(r.id, r.status);
  for (const [name, id] of Object.entries(ids)) out[name] = byId.get(id)!;
  const runRows = await db
    .select()
    .from(runs)
    .where(inArray(runs.id, Object.values(runOf)));
  for (const [name, id] of Object.entries(runOf)) out[`run:${name}`] = runRows.find((r) => r.id === id)!.status;
  return out;
}

/** The statuses `after` differs from `before` in. */
function diff(before: Record<string, string>, after: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.keys(after)
      .filter((k) => before[k] !== after[k])
      .map((k) => [k, `${before[k]}→${after[k]}`]),
  );
}

/** Runs the action as a dry run, then for real; checks they agree and the dry run wrote nothing. */
async function both(body: Record<string, unknown>) {
  let dry: any;
  // A dry run writes nothing at all: no row, no event, and no changed status, version or time.
  const state = await loadFromTables(app.runtime.db, app.ws.workspaceId);
  await app.expectUnchanged(async () => {
    dry = await lifecycle({ ...body, dry_run: true });
  });
  expect(await loadFromTables(app.runtime.db, app.ws.workspaceId)).toEqual(state);
  const before = await app.counts();
  const real = await lifecycle(body);
  const after = await app.counts();
  expect(real.status).toBe(dry.status);
  if (real.status === 200) {
    expect(dry.body.dry_run).toBe(true);
    expect(real.body.dry_run).toBe(false);
    expect(real.body.affected).toEqual(dry.body.affected);
    expect(real.body.changes).toEqual(dry.body.changes);
    expect(real.body.redispatched_tasks).toEqual(dry.body.redispatched_tasks);
    expect(real.body.decisions_cancelled).toEqual(dry.body.decisions_cancelled);
    // One ledger event per changed node, per new run and per decision cancelled with its run.
    expect(after.events! - before.events!).toBe(
      real.body.affected.nodes + real.body.runs_started.length + real.body.decisions_cancelled.length,
    );
  } else {
    expect(after).toEqual(before);
  }
  return real;
}

beforeAll(async () => {
  app = await startTestApp();
  const created = await app.request('POST', '/initiatives', {
    body: {
      title: 'Lifecycle tree',
      workstreams: W.map((w) => ({
        ref: ref(w),
        name: `Workstream ${w}`,
        milestones: M.map((m) => ({
          ref: ref(w, m),
          title: `Milestone ${w}.${m}`,
          tasks: T.map((t) => ({ ref: ref(w, m, t), title: `Task ${w}.${m}.${t}`, estimate_hours: 1 })),
        })),
      })),
    },
  });
  expect(created.status).toBe(201);
  ids = created.body.data.refs;
  initiativeId = created.body.data.initiative.id;
  const start = async (name: string) => {
    const res = await app.request('POST', '/runs', { body: { task_id: ids[name], agent_id: `agent-${name}` } });
    expect(res.status).toBe(201);
    runOf[name] = res.body.data.runId;
  };
  for (const w of W) for (const m of M) await start(ref(w, m, 0));
  for (const name of ['w0m0t1', 'w0m0t2', 'w1m0t1', 'w1m0t2']) await start(name);
  expect((await app.request('POST', `/runs/${runOf.w0m0t1}/actions/pause`, { body: { reason: 'on its own' } })).status).toBe(200);
  const decision = await app.request('POST', '/decisions', {
    body: { workspace_id: app.ws.workspaceId, title: 'Hold w0m0t2', run_id: runOf.w0m0t2, blocks_task: true },
  });
  expect(decision.status).toBe(201);
  heldDecision = decision.body.decision.id;
  expect((await app.request('POST', `/runs/${runOf.w1m0t1}/finish`, { body: { outcome: 'failed' } })).status).toBe(200);
  expect((await app.request('POST', `/runs/${runOf.w1m0t2}/finish`, { body: { outcome: 'completed' } })).status).toBe(200);
  // A milestone paused on its own, before anything above it.
  const own = await lifecycle({ level: 'milestone', id: ids.w2m1, action: 'pause', reason: 'on its own' });
  expect(own.status).toBe(200);
  expect(own.body.affected).toEqual({ nodes: 5, runsPaused: 1, runsCancelled: 0, redispatched: 0 });
});
afterAll(async () => {
  await app?.close();
});

describe('POST /lifecycle', () => {
  let beforePause: Record<string, string>;

  it('starts from the statuses the runs gave their tasks', async () => {
    const s = await snapshot();
    expect(s).toMatchObject({
      w0m0t0: 'in_progress',
      w0m0t1: 'paused',
      w0m0t2: 'blocked',
      w1m0t1: 'failed',
      w1m0t2: 'done',
      w2m1: 'paused',
      w2m1t0: 'paused',
      w2m1t1: 'paused',
      'run:w2m1t0': 'paused',
      'run:w0m0t2': 'paused',
    });
    beforePause = s;
  });

  it('pause on the initiative pauses it, its active descendants and their running runs', async () => {
    const res = await both({ level: 'initiative', id: initiativeId, action: 'pause', reason: 'freeze' });
    expect(res.status).toBe(200);
    // 1 initiative + 3 workstreams + 5 active milestones + 12 active tasks + 5 running runs.
    expect(res.body.affected).toEqual({ nodes: 26, runsPaused: 5, runsCancelled: 0, redispatched: 0 });
    expect(res.body).toMatchObject({ ok: true, action: 'pause', level: 'initiative', id: initiativeId });
    expect(res.body.message).toEqual(expect.any(String));
    const s = await snapshot();
    const changed = diff(beforePause, s);
    expect(Object.keys(changed)).toHaveLength(26);
    expect(Object.values(changed).every((c) => c.endsWith('→paused'))).toBe(true);
    // Untouched: what was not active (failed, done, already paused) and the held run.
    for (const k of ['w1m0t1', 'w1m0t2', 'w2m1', 'w2m1t0', 'w0m0t1', 'run:w0m0t2', 'run:w0m0t1', 'run:w1m0t1'])
      expect(changed[k]).toBeUndefined();
  });

  it('pausing it again is 200 with zero counts and writes nothing', async () => {
    await app.expectUnchanged(async () => {
      const res = await lifecycle({ level: 'initiative', id: initiativeId, action: 'pause' });
      expect(res.status).toBe(200);
      expect(res.body.affected).toEqual({ nodes: 0, runsPaused: 0, runsCancelled: 0, redispatched: 0 });
    });
  });

  it('a node under a paused ancestor cannot be resumed on its own (409), and nothing changes', async () => {
    for (const [level, id] of [
      ['workstream', ids.w0],
      ['task', ids.w0m1t0],
      ['run', runOf.w0m1t0],
    ] as const) {
      const res = await both({ level, id, action: 'resume' });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('lifecycle_action_failed');
    }
  });

  it('resume restores exactly what that pause changed, not what was paused before it', async () => {
    const res = await both({ level: 'initiative', id: initiativeId, action: 'resume' });
    expect(res.status).toBe(200);
    expect(res.body.affected).toEqual({ nodes: 26, runsPaused: 0, runsCancelled: 0, redispatched: 0 });
    expect(await snapshot()).toEqual(beforePause);
    // The milestone paused on its own resumes on its own, with what it had paused.
    const own = await both({ level: 'milestone', id: ids.w2m1, action: 'resume' });
    expect(own.body.affected.nodes).toBe(5);
    expect(await snapshot()).toMatchObject({ w2m1: 'active', w2m1t0: 'in_progress', 'run:w2m1t0': 'running', w2m1t1: 'todo' });
  });

  it('a task paused with a blocked task under it comes back blocked; its held run stays held', async () => {
    const pause = await both({ level: 'task', id: ids.w0m0t2, action: 'pause' });
    expect(pause.body.affected).toEqual({ nodes: 1, runsPaused: 0, runsCancelled: 0, redispatched: 0 });
    const resume = await both({ level: 'task', id: ids.w0m0t2, action: 'resume' });
    expect(resume.body.affected.nodes).toBe(1);
    expect(await snapshot()).toMatchObject({ w0m0t2: 'blocked', 'run:w0m0t2': 'paused' });
  });

  it('run level: pause and resume a run; its task follows', async () => {
    const pause = await both({ level: 'run', id: runOf.w1m1t0, action: 'pause' });
    expect(pause.body.affected).toEqual({ nodes: 2, runsPaused: 1, runsCancelled: 0, redispatched: 0 });
    expect(await snapshot()).toMatchObject({ 'run:w1m1t0': 'paused', w1m1t0: 'paused' });
    const resume = await both({ level: 'run', id: runOf.w1m1t0, action: 'resume' });
    expect(resume.body.affected.nodes).toBe(2);
    expect(await snapshot()).toMatchObject({ 'run:w1m1t0': 'running', w1m1t0: 'in_progress' });
  });

  it('cancel on a workstream cancels it, its open descendants, their runs, and the decisions of those runs', async () => {
    const before = await snapshot();
    const res = await both({ level: 'workstream', id: ids.w0, action: 'cancel', reason: 'dropped' });
    expect(res.status).toBe(200);
    // 1 workstream + 2 milestones + 6 tasks + 4 open runs.
    expect(res.body.affected).toEqual({ nodes: 13, runsPaused: 0, runsCancelled: 4, redispatched: 0 });
    expect(res.body.decisions_cancelled).toEqual([heldDecision]);
    const changed = diff(before, await snapshot());
    expect(Object.keys(changed)).toHaveLength(13);
    expect(Object.values(changed).every((c) => c.endsWith('→cancelled'))).toBe(true);
    const [d] = await app.runtime.db.select().from(decisions).where(eq(decisions.id, heldDecision));
    expect(d!.status).toBe('cancelled');
    // Again: nothing to do.
    await app.expectUnchanged(async () => {
      expect((await lifecycle({ level: 'workstream', id: ids.w0, action: 'cancel' })).body.affected.nodes).toBe(0);
    });
  });

  it('impossible actions are 409 lifecycle_action_failed and change nothing', async () => {
    for (const body of [
      { level: 'task', id: ids.w1m0t2, action: 'retry' }, // done
      { level: 'task', id: ids.w1m0t2, action: 'cancel' }, // done
      { level: 'workstream', id: ids.w0, action: 'pause' }, // cancelled
      { level: 'workstream', id: ids.w0, action: 'resume' }, // cancelled
      { level: 'run', id: runOf.w1m0t2, action: 'pause' }, // completed
      { level: 'milestone', id: ids.w0m0, action: 'retry' }, // under a cancelled workstream
    ]) {
      const res = await both(body);
      expect(res.status, JSON.stringify(body)).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'lifecycle_action_failed', details: { level: body.level } });
    }
  });

  it('retry re-dispatches the failed and cancelled tasks with a new queued run each', async () => {
    const ws = await both({ level: 'workstream', id: ids.w0, action: 'retry' });
    expect(ws.status).toBe(200);
    // Reopened: 1 workstream + 2 milestones; re-dispatched: its 6 cancelled tasks.
    expect(ws.body.affected).toEqual({ nodes: 9, runsPaused: 0, runsCancelled: 0, redispatched: 6 });
    expect(ws.body.runs_started).toHaveLength(6);
    const started = await app.runtime.db.select().from(runs).where(inArray(runs.id, ws.body.runs_started));
    expect(started.every((r) => r.status === 'queued')).toBe(true);
    expect(started.find((r) => r.taskId === ids.w0m0t0)!.agentId).toBe('agent-w0m0t0');
    const s = await snapshot();
    expect(T.every((t) => s[ref(0, 0, t)] === 'todo' && s[ref(0, 1, t)] === 'todo')).toBe(true);
    expect(s.w0).toBe('active');

    const failed = await both({ level: 'workstream', id: ids.w1, action: 'retry' });
    expect(failed.body.affected).toEqual({ nodes: 1, runsPaused: 0, runsCancelled: 0, redispatched: 1 });
    expect((await snapshot()).w1m0t1).toBe('todo');
    // Nothing left to retry: 200, zero counts.
    await app.expectUnchanged(async () => {
      expect((await lifecycle({ level: 'workstream', id: ids.w1, action: 'retry' })).body.affected.redispatched).toBe(0);
    });
  });

  it('answers 404 for another workspace’s node, 400 for an unknown level or action, 403 for a viewer', async () => {
    const other = await app.createWorkspace();
    const viewer = await app.member('viewer');
    await app.expectUnchanged(async () => {
      expect(
        (await app.request('POST', '/lifecycle', { body: { level: 'initiative', id: initiativeId, action: 'pause' }, key: other.apiKey }))
          .status,
      ).toBe(404);
      expect((await lifecycle({ level: 'initiative', id: randomUUID(), action: 'pause' })).status).toBe(404);
      expect((await lifecycle({ level: 'galaxy', id: initiativeId, action: 'pause' })).status).toBe(400);
      expect((await lifecycle({ level: 'initiative', id: initiativeId, action: 'explode' })).status).toBe(400);
      expect((await lifecycle({ level: 'initiative', id: initiativeId, action: 'pause', dry_run: 'yes' })).status).toBe(400);
      expect((await lifecycle({ level: 'initiative', id: initiativeId, action: 'pause', extra: 1 })).status).toBe(400);
      expect(
        (
          await app.request('POST', '/lifecycle', {
            body: { level: 'initiative', id: initiativeId, action: 'pause' },
            session: viewer.session,
          })
        ).status,
      ).toBe(403);
    });
  });

  it('the tables equal the ledger replayed', async () => {
    const replayed = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, app.ws.workspaceId));
  });
});
