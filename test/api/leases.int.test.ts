/**
 * Claiming work, leases and fencing (docs/contract.md §4.16): POST /tasks/claim, the lease every
 * run holds, heartbeats, the lease-expiry job, and the 409 lease_expired that keeps a stale agent
 * from writing over the next holder's work. Over HTTP through the served API; the job is run as the
 * server runs it, with the clock it is given.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { idempotencyRecords, ledgerEvents, runs, tasks } from '@/db/schema';
import { expireLapsedLeases } from '@/server/domain/runs/lease-expiry';
import { metricsText } from '@/server/metrics';
import { loadFromTables } from '@/server/projections/state';
import { replayWorkspace } from '@/server/projections/rebuild';
import { verifyWorkspace } from '@/server/ledger/verify';
import { testEngine } from '../support/engine';
import { startTestApp, type ApiResponse, type TestApp, type TestWorkspace } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** A workspace of its own: claims take whatever is ready in a workspace. */
async function workspace(): Promise<
  TestWorkspace & { post: (path: string, body: unknown, headers?: Record<string, string>) => Promise<ApiResponse> }
> {
  const ws = await app.createWorkspace(`leases-${randomUUID().slice(0, 8)}`);
  return { ...ws, post: (path, body, headers) => app.request('POST', path, { key: ws.apiKey, body, headers }) };
}

type Ws = Awaited<ReturnType<typeof workspace>>;

async function newTask(ws: Ws, body: Record<string, unknown> = {}): Promise<string> {
  const res = await ws.post('/work', { title: `task ${randomUUID().slice(0, 6)}`, ...body });
  expect(res.status).toBe(201);
  return res.body.data.taskId as string;
}

const runRow = async (runId: string) => (await app.runtime.db.select().from(runs).where(eq(runs.id, runId)))[0]!;
const taskRow = async (taskId: string) => (await app.runtime.db.select().from(tasks).where(eq(tasks.id, taskId)))[0]!;
const eventsOf = async (aggregateId: string) =>
  (
    await app.runtime.db.select().from(ledgerEvents).where(eq(ledgerEvents.aggregateId, aggregateId)).orderBy(asc(ledgerEvents.sequence))
  ).map((e) => e.eventType);
/** The job's pass as if the clock read `now`. */
const expireAt = (now: Date) => expireLapsedLeases(app.runtime.db, { now, holder: `test-${randomUUID()}` });
const later = (seconds: number) => new Date(Date.now() + seconds * 1000);

describe('POST /tasks/claim', () => {
  it('takes the first ready task in priority order, starts its run with a lease and a fence, and answers 201', async () => {
    const ws = await workspace();
    const low = await newTask(ws, { priority: 'low' });
    const urgent = await newTask(ws, { priority: 'urgent' });
    const t0 = Date.now();
    const res = await ws.post('/tasks/claim', { agent_id: 'agent-a', lease_seconds: 60 });
    expect(res.status).toBe(201);
    const { task, run } = res.body.data;
    expect(task).toMatchObject({ id: urgent, status: 'in_progress', aggregateVersion: 2 });
    expect(run).toMatchObject({
      status: 'running',
      task_id: urgent,
      agent_id: 'agent-a',
      fence: 1,
      lease_seconds: 60,
      failure_reason: null,
    });
    const expires = Date.parse(run.lease_expires_at);
    expect(expires).toBeGreaterThanOrEqual(t0 + 60_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(await eventsOf(run.runId)).toEqual(['run.created']);
    expect((await eventsOf(urgent)).at(-1)).toBe('task.status_changed');
    // The next claim gets the next task; then nothing is ready: 204, no body, nothing written.
    expect((await ws.post('/tasks/claim', { agent_id: 'agent-b' })).body.data.task.id).toBe(low);
    await app.expectUnchanged(async () => {
      const none = await ws.post('/tasks/claim', { agent_id: 'agent-c' });
      expect(none.status).toBe(204);
      expect(none.text).toBe('');
    });
  });

  it('claims only what the filters match, and never a task that is not ready', async () => {
    const ws = await workspace();
    const build = await newTask(ws, { priority: 'high' });
    const research = await newTask(ws, { priority: 'low' });
    await app.runtime.db.update(tasks).set({ type: 'research' }).where(eq(tasks.id, research));
    // A task with an open run is not ready.
    expect((await ws.post('/runs', { task_id: build })).status).toBe(201);
    expect((await ws.post('/tasks/claim', { agent_id: 'a', filters: { type: ['build'] } })).status).toBe(204);
    expect((await ws.post('/tasks/claim', { agent_id: 'a', filters: { priority: ['urgent', 'high'] } })).status).toBe(204);
    const got = await ws.post('/tasks/claim', { agent_id: 'a', filters: { type: ['research'], priority: ['low'] } });
    expect(got.status).toBe(201);
    expect(got.body.data.task.id).toBe(research);
  });

  it('twenty agents claiming ten tasks at once: each task is claimed exactly once, the rest get 204, never 409', async () => {
    const ws = await workspace();
    const ids = new Set<string>();
    for (let i = 0; i < 10; i++) ids.add(await newTask(ws));
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => ws.post('/tasks/claim', { agent_id: `agent-${i}` })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(10).fill(201), ...Array(10).fill(204)]);
    const claimed = answers.filter((a) => a.status === 201).map((a) => a.body.data.task.id as string);
    expect(new Set(claimed)).toEqual(ids);
    for (const id of ids) expect((await taskRow(id)).status).toBe('in_progress');
  });

  it('claims that arrive together are answered in batches: queue order, each filter, each key, each failure on its own', async () => {
    const ws = await workspace();
    const queue: { id: string; priority: string }[] = [];
    for (let i = 0; i < 12; i++) {
      const priority = i % 2 ? 'high' : 'low';
      queue.push({ id: await newTask(ws, { priority }), priority });
    }
    // Last in the queue (low, newest), and the only research task.
    const research = await newTask(ws, { priority: 'low' });
    await app.runtime.db.update(tasks).set({ type: 'research' }).where(eq(tasks.id, research));
    const key = (name: string) => ({ 'Idempotency-Key': `${name}-${randomUUID()}` });
    const repeated = key('repeated');
    const lost = key('lost');
    const [plain, twice, foreign, researcher] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, (_, i) => ws.post('/tasks/claim', { agent_id: `agent-${i}` }, i < 4 ? key(`k${i}`) : {}))),
      Promise.all([0, 1].map(() => ws.post('/tasks/claim', { agent_id: 'repeated' }, repeated))),
      ws.post('/tasks/claim', { agent_id: 'lost', filters: { initiative_id: randomUUID() } }, lost),
      ws.post('/tasks/claim', { agent_id: 'researcher', filters: { type: ['research'] } }),
    ]);
    // One of the repeated key's two claims ran; the other replays its answer.
    expect(twice.map((a) => a.status).sort()).toEqual([200, 201]);
    expect(twice[0]!.body).toEqual(twice[1]!.body);
    const granted = [...plain, twice.find((a) => a.status === 201)!];
    expect(granted.map((a) => a.status)).toEqual(Array(11).fill(201));
    // Eleven claims took the first eleven tasks of the queue (highs first, then the oldest lows), each once.
    const expected = [...queue.filter((t) => t.priority === 'high'), ...queue.filter((t) => t.priority === 'low')].slice(0, 11);
    expect(new Set(granted.map((a) => a.body.data.task.id))).toEqual(new Set(expected.map((t) => t.id)));
    expect(researcher.status).toBe(201);
    expect(researcher.body.data.task.id).toBe(research);
    // A claim whose filters name no node of the workspace fails alone, leaving no idempotency record.
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: 'not_found', details: { fields: ['filters.initiative_id'] } });
    const records = await app.runtime.db
      .select()
      .from(idempotencyRecords)
      .where(and(eq(idempotencyRecords.workspaceId, ws.workspaceId), eq(idempotencyRecords.key, lost['Idempotency-Key'])));
    expect(records).toEqual([]);
    // Each claim is recorded as its own (its run, its events in order, under its request), in fewer transactions than claims.
    for (const answer of [...granted, researcher]) {
      const { run, task } = answer.body.data;
      expect(await eventsOf(run.runId)).toEqual(['run.created']);
      const [created] = await app.runtime.db.select().from(ledgerEvents).where(eq(ledgerEvents.aggregateId, run.runId));
      const [moved] = await app.runtime.db
        .select()
        .from(ledgerEvents)
        .where(and(eq(ledgerEvents.aggregateId, task.id), eq(ledgerEvents.eventType, 'task.status_changed')));
      expect(moved!.sequence).toBe(created!.sequence + 1);
      expect(created!.causationId).toBe(answer.headers.get('x-request-id'));
      expect(await runRow(run.runId)).toMatchObject({ agentId: run.agent_id, fence: 1, status: 'running' });
    }
    const [{ transactions }] = (await query<{ transactions: number }>(
      app.runtime.db,
      sql`select count(distinct xmin::text)::int as transactions from runs where workspace_id = ${ws.workspaceId}::uuid`,
    )) as [{ transactions: number }];
    // On PostgreSQL; PGlite has one connection, which a claim's transaction holds until its COMMIT,
    // so the next claim reaches the batch only once the last is done.
    if (testEngine() === 'postgres') expect(transactions).toBeLessThan(12);
    else expect(transactions).toBeLessThanOrEqual(12);
    expect((await verifyWorkspace(app.runtime.db, ws.workspaceId)).verified).toBe(true);
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    // As the ledger tells it, once the type set behind its back above is put back.
    await app.runtime.db.update(tasks).set({ type: 'build' }).where(eq(tasks.id, research));
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('replays the same claim for the same Idempotency-Key, and claims nothing more', async () => {
    const ws = await workspace();
    await newTask(ws);
    await newTask(ws);
    const key = `claim-${randomUUID()}`;
    const first = await ws.post('/tasks/claim', { agent_id: 'agent-a' }, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    await app.expectUnchanged(async () => {
      const again = await ws.post('/tasks/claim', { agent_id: 'agent-a' }, { 'Idempotency-Key': key });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
    });
    // A claim that found nothing replays as nothing, even once something is ready.
    const empty = await workspace();
    const emptyKey = `claim-${randomUUID()}`;
    expect((await empty.post('/tasks/claim', { agent_id: 'a' }, { 'Idempotency-Key': emptyKey })).status).toBe(204);
    await newTask(empty);
    expect((await empty.post('/tasks/claim', { agent_id: 'a' }, { 'Idempotency-Key': emptyKey })).status).toBe(204);
  });

  it('shares transactions only with other claims: a write racing a claim of its task is recorded at the version it answered', async () => {
    const ws = await workspace();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await newTask(ws, { priority: 'urgent' }));
    const [claims, patches] = await Promise.all([
      Promise.all(ids.map((_, i) => ws.post('/tasks/claim', { agent_id: `agent-${i}` }))),
      Promise.all(ids.map((id, i) => app.request('PATCH', `/tasks/${id}`, { key: ws.apiKey, body: { title: `renamed ${i}` } }))),
    ]);
    expect(claims.map((c) => c.status)).toEqual(Array(20).fill(201));
    for (const patched of patches) {
      expect(patched.status).toBe(200);
      const [event] = await app.runtime.db
        .select()
        .from(ledgerEvents)
        .where(eq(ledgerEvents.causationId, patched.headers.get('x-request-id')!));
      expect(event!.aggregateVersion).toBe(patched.body.data.task.aggregateVersion);
    }
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('refuses bad input with the contract’s error and writes nothing', async () => {
    const ws = await workspace();
    await newTask(ws);
    const bad: [unknown, string][] = [
      [{}, 'validation_failed'],
      [{ agent_id: 'a', lease_seconds: 4 }, 'validation_failed'],
      [{ agent_id: 'a', lease_seconds: 3601 }, 'validation_failed'],
      [{ agent_id: 'a', lease_seconds: 30.5 }, 'validation_failed'],
      [{ agent_id: 'a', filters: { status: ['todo'] } }, 'unknown_field'],
      [{ agent_id: 'a', filters: { type: ['nonsense'] } }, 'validation_failed'],
      [{ agent_id: 'a', task_id: randomUUID() }, 'unknown_field'],
    ];
    for (const [body, code] of bad) {
      await app.expectUnchanged(async () => {
        const res = await ws.post('/tasks/claim', body, { 'Idempotency-Key': `bad-${randomUUID()}` });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ error: { code } });
        expect(res.body.error.requestId).toBeTruthy();
      });
    }
    // Another workspace's initiative is not found, as one that does not exist: never a claim of nothing.
    const other = await workspace();
    const foreign = (await other.post('/work', { title: 'theirs' })).body.data.task.initiative_id as string;
    for (const initiative_id of [foreign, randomUUID()]) {
      await app.expectUnchanged(async () => {
        const res = await ws.post('/tasks/claim', { agent_id: 'a', filters: { initiative_id } });
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ code: 'not_found', details: { fields: ['filters.initiative_id'] } });
      });
    }
  });
});

describe('leases and heartbeats', () => {
  it('POST /runs takes lease_seconds (default 300); fences count the task’s runs', async () => {
    const ws = await workspace();
    const taskId = await newTask(ws);
    const first = await ws.post('/runs', { task_id: taskId });
    expect(first.body.data).toMatchObject({ fence: 1, lease_seconds: 300 });
    expect((await ws.post(`/runs/${first.body.data.runId}/actions/cancel`, {})).status).toBe(200);
    expect((await runRow(first.body.data.runId)).leaseExpiresAt).toBeNull();
    const second = await ws.post('/runs', { task_id: taskId, lease_seconds: 5 });
    expect(second.body.data).toMatchObject({ fence: 2, lease_seconds: 5 });
  });

  it('a heartbeat renews the lease (one run.lease_renewed event), may change its length, and a checkpoint renews it too', async () => {
    const ws = await workspace();
    await newTask(ws);
    const { run } = (await ws.post('/tasks/claim', { agent_id: 'a', lease_seconds: 30 })).body.data;
    const beat = await ws.post(`/runs/${run.runId}/heartbeat`, { lease_seconds: 120 });
    expect(beat.status).toBe(200);
    expect(beat.body.data).toMatchObject({ runId: run.runId, status: 'running', fence: 1, lease_seconds: 120, aggregateVersion: 2 });
    expect(Date.parse(beat.body.data.lease_expires_at)).toBeGreaterThan(Date.parse(run.lease_expires_at) + 60_000);
    expect(await eventsOf(run.runId)).toEqual(['run.created', 'run.lease_renewed']);
    const row = await runRow(run.runId);
    expect(row.leaseExpiresAt!.toISOString()).toBe(beat.body.data.lease_expires_at);
    const cp = await ws.post(`/runs/${run.runId}/checkpoints`, { label: 'step' });
    expect(cp.status).toBe(201);
    expect((await runRow(run.runId)).leaseExpiresAt!.getTime()).toBeGreaterThanOrEqual(row.leaseExpiresAt!.getTime());
    // A paused run holds no lease: nothing to renew.
    expect((await ws.post(`/runs/${run.runId}/actions/pause`, {})).status).toBe(200);
    expect((await runRow(run.runId)).leaseExpiresAt).toBeNull();
    await app.expectUnchanged(async () => {
      const refused = await ws.post(`/runs/${run.runId}/heartbeat`, {});
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('invalid_state_transition');
    });
    // Resumed, it holds a new lease of its length from now.
    const t0 = Date.now();
    expect((await ws.post(`/runs/${run.runId}/actions/resume`, {})).status).toBe(200);
    expect((await runRow(run.runId)).leaseExpiresAt!.getTime()).toBeGreaterThanOrEqual(t0 + 119_000);
  });

  it('a heartbeat with a lease_seconds out of range is 400 and renews nothing', async () => {
    const ws = await workspace();
    await newTask(ws);
    const { run } = (await ws.post('/tasks/claim', { agent_id: 'a' })).body.data;
    await app.expectUnchanged(async () => {
      const res = await ws.post(`/runs/${run.runId}/heartbeat`, { lease_seconds: 0 });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    });
    expect((await runRow(run.runId)).version).toBe(1);
  });
});

describe('when a lease lapses', () => {
  it('the job fails the run (lease_expired, by the system), the task is ready again, and the next claim gets fence 2', async () => {
    const ws = await workspace();
    const taskId = await newTask(ws);
    const { run } = (await ws.post('/tasks/claim', { agent_id: 'stale', lease_seconds: 30 })).body.data;
    // Not yet lapsed: the pass leaves it alone.
    await expireAt(later(20));
    expect((await runRow(run.runId)).status).toBe('running');
    const before = (await metricsText()).text.match(/^aws_run_leases_lapsed_total (\d+)/m)?.[1] ?? '0';
    expect(await expireAt(later(31))).toBeGreaterThanOrEqual(1);
    const after = (await metricsText()).text.match(/^aws_run_leases_lapsed_total (\d+)/m)?.[1];
    expect(Number(after)).toBeGreaterThan(Number(before));

    const failed = await app.request('GET', `/runs/${run.runId}`, { key: ws.apiKey });
    expect(failed.body.data).toMatchObject({ status: 'failed', failure_reason: 'lease_expired', lease_expires_at: null });
    expect(failed.body.data.finished_at).not.toBeNull();
    const events = await app.runtime.db.select().from(ledgerEvents).where(eq(ledgerEvents.aggregateId, run.runId));
    const expired = events.find((e) => e.eventType === 'run.lease_expired')!;
    expect(expired).toMatchObject({ actorType: 'system', actorId: 'system:lease-expiry' });
    expect((await taskRow(taskId)).status).toBe('todo');

    const next = await ws.post('/tasks/claim', { agent_id: 'fresh' });
    expect(next.status).toBe(201);
    expect(next.body.data.task.id).toBe(taskId);
    expect(next.body.data.run.fence).toBe(2);

    // The stale agent wakes: everything it sends is 409 lease_expired, and nothing is written.
    const stale: [string, unknown][] = [
      [`/runs/${run.runId}/heartbeat`, {}],
      [`/runs/${run.runId}/checkpoints`, { label: 'late' }],
      [`/runs/${run.runId}/finish`, { outcome: 'completed' }],
      [`/runs/${run.runId}/actions/rollback`, { checkpointId: randomUUID() }],
      ['/decisions', { workspace_id: ws.workspaceId, title: 'late question', run_id: run.runId }],
      ['/live/dedup/claim', { source: 'ci', event_key: 'late', run_id: run.runId }],
    ];
    for (const [path, body] of stale) {
      await app.expectUnchanged(async () => {
        const res = await ws.post(path, body);
        expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 409, code: 'lease_expired' });
        expect(res.body.error.details).toMatchObject({ runId: run.runId, fence: 1 });
      });
    }
    // The new holder is untouched and goes on.
    expect((await ws.post(`/runs/${next.body.data.run.runId}/finish`, { outcome: 'completed' })).status).toBe(200);
    expect((await taskRow(taskId)).status).toBe('done');

    // The tables are what the ledger replays to, leases and fences included.
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('a run past its lease is refused at once, before the job has failed it', async () => {
    const ws = await workspace();
    await newTask(ws);
    const { run } = (await ws.post('/tasks/claim', { agent_id: 'slow', lease_seconds: 5 })).body.data;
    await new Promise((resolve) => setTimeout(resolve, Date.parse(run.lease_expires_at) - Date.now() + 50));
    await app.expectUnchanged(async () => {
      const res = await ws.post(`/runs/${run.runId}/checkpoints`, { label: 'too late' });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('lease_expired');
    });
    expect((await runRow(run.runId)).status).toBe('running');
  });

  it('a pass on one instance at a time: another holder’s pass is skipped', async () => {
    const holder = `holder-${randomUUID()}`;
    const { takeLease, releaseLease } = await import('@/server/job-lease');
    expect(await takeLease(app.runtime.db, 'run-lease-expiry', 30_000, holder)).toBe(true);
    try {
      expect(await expireAt(later(3600))).toBeNull();
    } finally {
      await releaseLease(app.runtime.db, 'run-lease-expiry', holder);
    }
  });
});
