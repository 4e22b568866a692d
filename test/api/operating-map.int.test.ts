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
  return { launch, handoffDecision };
}

describe('the projection tables are the ledger replayed', () => {
  it('replaying the ledger gives exactly the rows the tables hold', async () => {
    const { state } = await replayWorkspace(app.runtime.db, ws.workspaceId);
    const tables = await loadFromTables(app.runtime.db, ws.workspaceId);
    expect(state).toEqual(tables);
    expect(state.tasks.size).toBe(8);
    expect(state.decisions.size).toBe(4);
  });

  it('after the tables are emptied and rebuilt from the ledger, they hold the same rows and the map is unchanged', async () => {
    const before = await loadFromTables(app.runtime.db, ws.workspaceId);
    const mapBefore = (await as('GET', '/operating-map?limit=200')).body;
    // Drop the workspace's projection rows (children first), as an operator wiping them would.
    for (const table of ['decision_attention', 'decisions', 'runs', 'receipts', 'tasks', 'milestones', 'workstreams', 'initiatives']) {
      await app.runtime.db.execute(sql`delete from ${sql.identifier(table)} where workspace_id = ${ws.workspaceId}`);
    }
    const emptied = await loadFromTables(app.runtime.db, ws.workspaceId);
    expect([emptied.initiatives.size, emptied.tasks.size, emptied.decisions.size]).toEqual([0, 0, 0]);
    expect((await as('GET', `/initiatives/${built.launch.initiative.id}`)).status).toBe(404);
    const [report] = await rebuildProjections(app.runtime.db, ws.workspaceId);
    expect(report!.rows).toMatchObject({ initiatives: 4, tasks: 8, decisions: 4, attention: 2 });
    expect(await loadFromTables(app.runtime.db, ws.workspaceId)).toEqual(before);
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
    const fromTables = operatingMap(await loadFromTables(app.runtime.db, ws.workspaceId), 200);
    expect(res.body.data).toEqual(fromTables);
  });

  it('shows processes, stages, handoffs and evidence', async () => {
    const { data, meta } = (await as('GET', '/operating-map')).body;
    expect(data.totalProcesses).toBe(4);
    expect(data.processes.map((p: { title: string }) => p.title)).toEqual(['Support', 'Empty one', 'Launch the EU site', 'Inbox']);
    const launch = data.processes.find((p: { initiative_id: string }) => p.initiative_id === built.launch.initiative.id);
    const refs = built.launch.refs;
    expect(launch.stages.map((s: { name: string }) => s.name)).toEqual(['Research', 'Build']);
    const build = launch.stages.find((s: { workstream_id: string }) => s.workstream_id === refs.build);
    expect(build).toMatchObject({ name: 'Build', tasks_total: 2, milestones: 2, estimate_hours: 24, depends_on: [refs.research] });
    expect(build.task_counts).toMatchObject({ todo: 2, done: 0 });
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
    expect(meta.replayedEvents).toBe(head.sequence);
    expect(meta.replayedAggregates).toBeGreaterThan(20);
    expect(Date.parse(meta.rebuiltAt)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('limits the processes, newest first, and keeps up with new events', async () => {
    const two = (await as('GET', '/operating-map?limit=2')).body.data;
    expect(two.processes).toHaveLength(2);
    expect(two.totalProcesses).toBe(4);
    const fresh = (await as('POST', '/initiatives', { title: `Fresh ${randomUUID().slice(0, 4)}` })).body.data.initiative;
    const again = (await as('GET', '/operating-map?limit=1')).body;
    expect(again.data.processes[0].initiative_id).toBe(fresh.id);
    expect(again.meta.replayedEvents).toBe((await as('GET', '/ledger/verify')).body.data.head.sequence);
  });

  it('refuses a limit outside 1..200 and another workspace', async () => {
    for (const limit of ['0', '201', 'x']) expect((await as('GET', `/operating-map?limit=${limit}`)).status).toBe(400);
    expect((await as('GET', `/operating-map?workspace_id=${app.ws.workspaceId}`)).status).toBe(403);
  });
});
