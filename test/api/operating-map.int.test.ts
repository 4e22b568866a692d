/**
 * The operating map is computed from the ledger alone, and the projection tables are exactly what
 * replaying the ledger gives: both are checked on a workspace built through the API, and again
 * after the tables are emptied and rebuilt from the ledger.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatingMap } from '@/server/domain/operating-map/map';
import { sweepDecisionTimeouts } from '@/server/domain/decisions/timeouts';
import { rebuildProjections, replayWorkspace } from '@/server/projections/rebuild';
import { cachedWorkspaces, MAX_WORKSPACES, resetReplayCache, withReplayed } from '@/server/projections/replay-cache';
import { loadFromTables } from '@/server/projections/state';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { launchTree } from '../support/fixtures';

let app: TestApp;
let ws: TestWorkspace;
let built: { launch: any; handoffDecision: string };

beforeAll(async () => {
  app = await startTestApp();
  ws = await app.createWorkspace();
  built = await buildVariedWorkspace();
});
afterAll(async () => {
  await app?.close();
});

const as = (method: string, path: string, body?: unknown, extra: Record<string, unknown> = {}) =>
  app.request(method, path, { key: ws.apiKey, body, ...extra });

/** Trees, work in and out of them, decisions in every state, attention, a ruling with a continuation. */
async function buildVariedWorkspace() {
  const launch = (await as('POST', '/initiatives', launchTree)).body.data;
  await as('POST', '/initiatives', { title: 'Empty one' });
  const second = (
    await as('POST', '/initiatives', {
      title: 'Support',
      workstreams: [
        { ref: 'triage', name: 'Triage', milestones: [{ ref: 'q1', title: 'Q1', tasks: [{ title: 'Tag tickets', estimate_hours: 1 }] }] },
      ],
    })
  ).body.data;
  const refs = launch.refs;
  for (const title of ['Inbox item 1', 'Inbox item 2']) await as('POST', '/work', { title });
  const placed = await as('POST', '/work', {
    title: 'Write launch post',
    initiative_id: launch.initiative.id,
    workstream_id: refs.build,
    milestone_id: refs['m-ga'],
    estimate_hours: 4,
  });
  await as('POST', '/work', {
    title: 'Answer tickets',
    initiative_id: second.initiative.id,
    workstream_id: second.refs.triage,
    milestone_id: second.refs.q1,
  });

  const raise = async (body: Record<string, unknown>) =>
    (await as('POST', '/decisions', { workspace_id: ws.workspaceId, ...body })).body.decision.id as string;
  const approver = await app.member('approver', ws.workspaceId);
  const handoffDecision = await raise({ title: 'Hand the post to marketing?', shape: 'handoff_route', task_id: placed.body.data.taskId });
  await as('POST', `/decisions/${handoffDecision}/attention`, { recommended_option_id: undefined, impact_if_delayed: 'a day' });
  await app.request('POST', `/decisions/${handoffDecision}/approve`, { session: approver.session, body: { note: 'yes' } });
  const declined = await raise({ title: 'Spend more?', shape: 'budget_approval', task_id: placed.body.data.taskId });
  await app.request('POST', `/decisions/${declined}/decline`, { session: approver.session, body: {} });
  const pending = await raise({ title: 'Still open', urgency: 'critical' });
  await as('POST', `/decisions/${pending}/attention`, {});
  await as('POST', `/decisions/${pending}/attention`, { recommendation_note: 'please' });
  await raise({ title: 'Will expire', due_at: new Date(Date.now() + 60_000).toISOString() });
  await sweepDecisionTimeouts(app.runtime.db, { workspaceId: ws.workspaceId, now: new Date(Date.now() + 120_000) });

  // Runs in several states, a checkpoint and a rollback, a restart continuation, lifecycle actions, claims.
  const ok = <R extends { status: number; text: string }>(res: R): R => {
    expect(res.status, res.text).toBeLessThan(300);
    return res;
  };
  const startRun = async (taskId: string) =>
    (ok(await as('POST', '/runs', { task_id: taskId, agent_id: 'mapper' })).body as any).data.runId as string;
  const runA = await startRun(placed.body.data.taskId);
  const cp = (ok(await as('POST', `/runs/${runA}/checkpoints`, { label: 'draft', state: { words: 300 } })).body as any).data.checkpointId;
  ok(await as('POST', `/runs/${runA}/actions/rollback`, { checkpointId: cp, reason: 'redo' }));
  ok(await as('POST', `/runs/${runA}/actions/resume`, {}));
  ok(await as('POST', `/runs/${runA}/finish`, { outcome: 'completed', summary: 'posted' }));
  const runB = await startRun(refs.api);
  const held = await raise({ title: 'Use the new API?', run_id: runB, blocks_task: true });
  ok(await as('POST', `/decisions/${held}/attention`, { continuation: { strategy: 'restart_task' } }));
  ok(await app.request('POST', `/decisions/${held}/approve`, { session: approver.session, body: {} }));
  const runC = await startRun(refs.recruit);
  ok(await as('POST', `/runs/${runC}/finish`, { outcome: 'failed' }));
  ok(await as('POST', '/lifecycle', { level: 'initiative', id: second.initiative.id, action: 'pause' }));
  ok(await as('POST', '/lifecycle', { level: 'initiative', id: second.initiative.id, action: 'resume' }));
  ok(await as('POST', '/lifecycle', { level: 'workstream', id: refs.research, action: 'retry' }));
  ok(await as('POST', '/lifecycle', { level: 'milestone', id: refs['m-beta'], action: 'cancel' }));
  ok(await as('POST', '/live/dedup/claim', { source: 'cron', event_key: 'nightly' }));
  const claimed = ok(await as('POST', '/live/dedup/claim', { source: 'cron', event_key: 'weekly' })).body as any;
  ok(await as('POST', '/live/dedup/release', { source: 'cron', event_key: 'weekly', run_id: claimed.active_run_id }));
  return { launch, handoffDecision };
}

describe('the projection tables are the ledger replayed', () => {
  it('replaying the ledger gives exactly the rows the tables hold', async () => {
    const { state } = await replayWorkspace(app.runtime.db, ws.workspaceId);
    const tables = await loadFromTables(app.runtime.db, ws.workspaceId);
    expect(state).toEqual(tables);
    expect(state.tasks.size).toBe(8);
    expect(state.decisions.size).toBe(5);
    expect(new Set([...state.runs.values()].map((r) => r.status))).toEqual(new Set(['completed', 'cancelled', 'failed', 'queued']));
    expect(state.checkpoints.size).toBe(1);
    expect(state.claims.size).toBe(2);
  });

  it('after the tables are emptied and rebuilt from the ledger, they hold the same rows and the map is unchanged', async () => {
    const before = await loadFromTables(app.runtime.db, ws.workspaceId);
    const mapBefore = (await as('GET', '/operating-map?limit=200')).body;
    // Drop the workspace's projection rows (children first), as an operator wiping them would.
    for (const table of [
      'decision_attention',
      'decisions',
      'dedup_claims',
      'run_checkpoints',
      'runs',
      'receipts',
      'tasks',
      'milestones',
      'workstreams',
      'initiatives',
    ]) {
      await app.runtime.db.execute(sql`delete from ${sql.identifier(table)} where workspace_id = ${ws.workspaceId}`);
    }
    const emptied = await loadFromTables(app.runtime.db, ws.workspaceId);
    expect([emptied.initiatives.size, emptied.tasks.size, emptied.decisions.size, emptied.runs.size]).toEqual([0, 0, 0, 0]);
    expect((await as('GET', `/initiatives/${built.launch.initiative.id}`)).status).toBe(404);
    // With the tables empty and nothing cached, the map is still whole: it comes from the ledger.
    resetReplayCache(app.runtime.db);
    expect((await as('GET', '/operating-map?limit=200')).body.data).toEqual(mapBefore.data);
    const [report] = await rebuildProjections(app.runtime.db, ws.workspaceId);
    expect(report!.rows).toMatchObject({ initiatives: 4, tasks: 8, decisions: 5, attention: 3, runs: 5, checkpoints: 1, claims: 2 });
    expect(await loadFromTables(app.runtime.db, ws.workspaceId)).toEqual(before);
    resetReplayCache(app.runtime.db);
    const mapAfter = (await as('GET', '/operating-map?limit=200')).body;
    expect(mapAfter.data).toEqual(mapBefore.data);
    // The API reads the rebuilt tables as before.
    const tree = await as('GET', `/initiatives/${built.launch.initiative.id}?include=tree`);
    expect(tree.body.data.tree.estimate_hours).toBe(37.5);
    expect((await as('GET', '/ledger/verify')).body.data.ok).toBe(true);
  });
});

describe('GET /operating-map', () => {
  it('equals the map of what the tables say', async () => {
    const res = await as('GET', '/operating-map?limit=200');
    expect(res.status).toBe(200);
    const { aggregateIds: _ids, ...fromTables } = operatingMap(await loadFromTables(app.runtime.db, ws.workspaceId), 200);
    expect(res.body.data).toEqual(fromTables);
    // Runs show on their stages as they land.
    const launch = res.body.data.processes.find((p: { initiative_id: string }) => p.initiative_id === built.launch.initiative.id);
    const build = launch.stages.find((s: { workstream_id: string }) => s.workstream_id === built.launch.refs.build);
    expect(build.run_counts).toEqual({ completed: 1, cancelled: 2 });
  });

  it('shows processes, stages, handoffs and evidence', async () => {
    const { data, meta } = (await as('GET', '/operating-map')).body;
    expect(meta.totalProcesses).toBe(4);
    expect(data.totalProcesses, 'deprecated, the same').toBe(4);
    expect(data.processes.map((p: { title: string }) => p.title)).toEqual(['Support', 'Empty one', 'Launch the EU site', 'Inbox']);
    const launch = data.processes.find((p: { initiative_id: string }) => p.initiative_id === built.launch.initiative.id);
    const refs = built.launch.refs;
    expect(launch.stages.map((s: { name: string }) => s.name)).toEqual(['Research', 'Build']);
    const build = launch.stages.find((s: { workstream_id: string }) => s.workstream_id === refs.build);
    expect(build).toMatchObject({ name: 'Build', tasks_total: 2, milestones: 2, estimate_hours: 24, depends_on: [refs.research] });
    expect(build.task_counts).toMatchObject({ done: 1, cancelled: 1 });
    expect(launch.handoffs).toEqual(
      expect.arrayContaining([
        { kind: 'dependency', level: 'workstream', from_id: refs.research, to_id: refs.build },
        { kind: 'dependency', level: 'task', from_id: refs.recruit, to_id: refs.interview },
        expect.objectContaining({ kind: 'decision', decision_id: built.handoffDecision, status: 'approved', workstream_id: refs.build }),
      ]),
    );
    expect(launch.evidence).toHaveLength(1);
    const evidence = launch.evidence[0];
    const events = (await as('GET', '/events/stream?type=work.created&limit=100')).body.data;
    const recorded = events.find((e: { id: string }) => e.id === evidence.event_id);
    expect(recorded.eventHash).toBe(evidence.event_hash);
    expect(recorded.payload.receipt.id).toBe(evidence.receipt_id);
    const inbox = data.processes.find((p: { is_inbox: boolean }) => p.is_inbox);
    expect(inbox.evidence).toHaveLength(2);

    const head = (await as('GET', '/ledger/verify')).body.data.head;
    expect(meta).toMatchObject({ apiVersion: '1', workspaceId: ws.workspaceId, projectionStatus: 'replayed', ledgerHead: head });
    // Every aggregate of the returned processes, and their events: the workspace's own events
    // (workspace, membership, key) and the claims belong to no process.
    const all = (await as('GET', '/events/stream?limit=100')).body.data as { aggregateId: string; aggregateType: string }[];
    const processAggregates = new Set(
      all.filter((e) => !['workspace', 'membership', 'api_key', 'dedup_claim'].includes(e.aggregateType)).map((e) => e.aggregateId),
    );
    // (decisions raised without a task or run belong to no initiative either)
    const unplaced = (await app.runtime.db.execute(
      sql`select id from decisions where workspace_id = ${ws.workspaceId} and initiative_id is null`,
    )) as unknown;
    const unplacedIds = new Set(((unplaced as { rows?: { id: string }[] }).rows ?? (unplaced as { id: string }[])).map((r) => r.id));
    const expectedAggregates = [...processAggregates].filter((a) => !unplacedIds.has(a));
    expect(meta.replayedAggregates).toBe(expectedAggregates.length);
    expect(meta.replayedEvents).toBe(all.filter((e) => expectedAggregates.includes(e.aggregateId)).length);
    expect(meta.replayedEvents).toBeLessThan(head.sequence);
    expect(Date.parse(meta.rebuiltAt)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('limits the processes, newest first, and keeps up with new events', async () => {
    const two = (await as('GET', '/operating-map?limit=2')).body.data;
    expect(two.processes).toHaveLength(2);
    expect(two.totalProcesses).toBe(4);
    const fresh = (await as('POST', '/initiatives', { title: `Fresh ${randomUUID().slice(0, 4)}` })).body.data.initiative;
    const again = (await as('GET', '/operating-map?limit=1')).body;
    expect(again.data.processes[0].initiative_id).toBe(fresh.id);
    // Only what that one process is made of was counted: its initiative and its one event.
    expect(again.meta).toMatchObject({ replayedAggregates: 1, replayedEvents: 1 });
    expect(again.meta.ledgerHead).toEqual((await as('GET', '/ledger/verify')).body.data.head);
  });

  it('filters to one initiative’s process', async () => {
    const one = (await as('GET', `/operating-map?initiative_id=${built.launch.initiative.id}&limit=1`)).body;
    expect(one.data.processes.map((p: { initiative_id: string }) => p.initiative_id)).toEqual([built.launch.initiative.id]);
    expect(one.data.totalProcesses).toBe(1);
    const none = (await as('GET', `/operating-map?initiative_id=${randomUUID()}`)).body;
    expect(none.data).toEqual({ processes: [], totalProcesses: 0 });
  });

  it('refuses a limit outside 1..200 and another workspace', async () => {
    for (const limit of ['0', '201', 'x']) expect((await as('GET', `/operating-map?limit=${limit}`)).status).toBe(400);
    expect((await as('GET', `/operating-map?workspace_id=${app.ws.workspaceId}`)).status).toBe(403);
  });
});

describe('projections:rebuild alongside writers', () => {
  it('never aborts a writer: 20 concurrent POST /work and 2 rebuilds all succeed, and the tables stay the ledger', async () => {
    const writes = Array.from({ length: 20 }, (_, i) => as('POST', '/work', { title: `during rebuild ${i}` }));
    const rebuilds = [rebuildProjections(app.runtime.db, ws.workspaceId), rebuildProjections(app.runtime.db, ws.workspaceId)];
    const results = await Promise.all(writes);
    await Promise.all(rebuilds);
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const { state } = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });
});

describe('the replay cache', () => {
  it(`keeps at most ${MAX_WORKSPACES} workspaces, dropping the least recently used`, async () => {
    resetReplayCache(app.runtime.db);
    const made: string[] = [];
    for (let i = 0; i <= MAX_WORKSPACES; i++) made.push((await app.createWorkspace()).workspaceId);
    for (const id of made) await withReplayed(app.runtime.db, id, () => undefined);
    // The 65th evicted the first; using the second again makes it the most recent, so the next new one evicts the third.
    await withReplayed(app.runtime.db, made[1]!, () => undefined);
    const cached = cachedWorkspaces(app.runtime.db);
    expect(cached).toHaveLength(MAX_WORKSPACES);
    expect(cached).not.toContain(made[0]);
    expect(cached.at(-1)).toBe(made[1]);
    await withReplayed(app.runtime.db, ws.workspaceId, () => undefined);
    expect(cachedWorkspaces(app.runtime.db)).not.toContain(made[2]);
  });
});
