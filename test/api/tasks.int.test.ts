/**
 * Tasks as a work queue: GET /tasks (every filter, both orders, `ready`, paging while writers
 * change tasks), GET /tasks/{id}, PATCH /tasks/{id} (merge patch, If-Match, ETag, no-op, unknown
 * field, another workspace), and twenty agents racing to start one ready task. Both engines; every
 * answer is checked against the served OpenAPI document by the test client.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { firstPageQuery, type TaskFilters, type TaskSort } from '@/server/domain/tasks/list';
import { inboxIds } from '@/server/domain/workspaces/ids';
import { replayWorkspace } from '@/server/projections/rebuild';
import { loadFromTables } from '@/server/projections/state';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '10000000' });
});
afterAll(async () => {
  await app?.close();
});

type Ws = TestWorkspace;

async function work(ws: Ws, body: Record<string, unknown>): Promise<string> {
  const res = await app.request('POST', '/work', { key: ws.apiKey, body });
  expect(res.status).toBe(201);
  return res.body.data.taskId;
}

/** An initiative whose one workstream has milestone M with tasks A, B (after A), C (after A and B); returns ids by ref. */
async function tree(ws: Ws): Promise<Record<string, string>> {
  const res = await app.request('POST', '/initiatives', {
    key: ws.apiKey,
    body: {
      title: `Plan ${randomUUID().slice(0, 6)}`,
      workstreams: [
        {
          ref: 'W',
          name: 'Build',
          milestones: [
            {
              ref: 'M',
              title: 'Beta',
              tasks: [
                { ref: 'A', title: 'A', type: 'research', priority: 'low' },
                { ref: 'B', title: 'B', type: 'build', priority: 'urgent', depends_on: ['A'] },
                { ref: 'C', title: 'C', type: 'review', priority: 'high', depends_on: ['A', 'B'] },
              ],
            },
          ],
        },
      ],
    },
  });
  expect(res.status, res.text).toBe(201);
  return { initiative: res.body.data.initiative.id, ...res.body.data.refs };
}

async function list(ws: Ws, q: string): Promise<any[]> {
  const res = await app.request('GET', `/tasks?${q}`, { key: ws.apiKey });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

/** Every page of a listing, with `between` run before each page after the first. */
async function walk(ws: Ws, q: string, between: () => Promise<void> = async () => {}): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    if (page > 0) await between();
    const res: any = await app.request('GET', `/tasks?${q}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: ws.apiKey });
    expect(res.status, res.text).toBe(200);
    ids.push(...res.body.data.map((t: any) => t.id));
    cursor = res.body.meta.nextCursor;
    expect(res.body.meta.hasMore).toBe(cursor !== null);
    if (!cursor) return ids;
  }
  throw new Error('never ended');
}

const startRun = (ws: Ws, taskId: string, agent = 'agent-1') =>
  app.request('POST', '/runs', { key: ws.apiKey, body: { task_id: taskId, agent_id: agent } });
const patch = (ws: Ws, taskId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  app.request('PATCH', `/tasks/${taskId}`, { key: ws.apiKey, body, headers });

describe('GET /tasks', () => {
  it('filters by status, type, priority, placement, agent and updated_after, each narrowing the list', async () => {
    const ws = await app.createWorkspace();
    const t = await tree(ws);
    const loose = await work(ws, { title: 'Loose', priority: 'medium' });
    const all = await list(ws, 'limit=100');
    expect(all.map((x) => x.id).sort()).toEqual([t.A, t.B, t.C, loose].sort());
    expect((await list(ws, `initiative_id=${t.initiative}`)).map((x) => x.id).sort()).toEqual([t.A, t.B, t.C].sort());
    expect((await list(ws, `workstream_id=${t.W}`)).length).toBe(3);
    expect((await list(ws, `milestone_id=${t.M}`)).length).toBe(3);
    expect((await list(ws, 'type=research&type=review')).map((x) => x.id).sort()).toEqual([t.A, t.C].sort());
    expect((await list(ws, 'priority=urgent')).map((x) => x.id)).toEqual([t.B]);
    expect((await patch(ws, t.C!, { agent_id: 'reviewer-7' })).status).toBe(200);
    expect((await list(ws, 'agent_id=reviewer-7')).map((x) => x.id)).toEqual([t.C]);
    expect((await startRun(ws, t.A!)).status).toBe(201);
    expect((await list(ws, 'status=in_progress')).map((x) => x.id)).toEqual([t.A]);
    expect((await list(ws, 'status=in_progress&status=todo')).length).toBe(4);
    const [{ now }] = (await query<{ now: string }>(
      app.runtime.db,
      sql`select to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as now`,
    )) as [{ now: string }];
    await new Promise((r) => setTimeout(r, 5));
    expect((await patch(ws, loose, { title: 'Loose, renamed' })).status).toBe(200);
    expect((await list(ws, `updated_after=${now}`)).map((x) => x.id)).toEqual([loose]);
    // A filter that is not an enumeration's value, and an unknown parameter, are refused.
    expect((await app.request('GET', '/tasks?status=doing', { key: ws.apiKey })).status).toBe(400);
    const unknown = await app.request('GET', '/tasks?colour=red', { key: ws.apiKey });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('unknown_field');
  });

  it('sorts by priority (urgent first, then oldest) and by updated (newest change first)', async () => {
    const ws = await app.createWorkspace();
    const low = await work(ws, { title: 'low', priority: 'low' });
    const urgent1 = await work(ws, { title: 'urgent 1', priority: 'urgent' });
    const medium = await work(ws, { title: 'medium', priority: 'medium' });
    const urgent2 = await work(ws, { title: 'urgent 2', priority: 'urgent' });
    const high = await work(ws, { title: 'high', priority: 'high' });
    expect((await list(ws, 'sort=priority')).map((x) => x.id)).toEqual([urgent1, urgent2, high, medium, low]);
    expect((await list(ws, '')).map((x) => x.id)).toEqual([urgent1, urgent2, high, medium, low]);
    await patch(ws, medium, { description: 'touched' });
    expect((await list(ws, 'sort=updated')).map((x) => x.id)).toEqual([medium, high, urgent2, urgent1, low]);
  });

  it('ready: todo, dependencies done, everything above active, no open run', async () => {
    const ws = await app.createWorkspace();
    const t = await tree(ws);
    const ready = async () => (await list(ws, 'ready=true')).map((x) => x.id);
    expect(await ready()).toEqual([t.A]);
    const run = await startRun(ws, t.A!);
    expect(await ready()).toEqual([]); // A has an open run; B and C wait for A
    await app.request('POST', `/runs/${run.body.data.runId}/finish`, { key: ws.apiKey, body: { outcome: 'completed' } });
    expect(await ready()).toEqual([t.B]); // C still waits for B
    // Pausing the milestone takes its tasks out of the queue; resuming brings them back.
    await app.request('POST', '/lifecycle', { key: ws.apiKey, body: { level: 'milestone', id: t.M, action: 'pause' } });
    expect(await ready()).toEqual([]);
    await app.request('POST', '/lifecycle', { key: ws.apiKey, body: { level: 'milestone', id: t.M, action: 'resume' } });
    expect(await ready()).toEqual([t.B]);
    await app.request('POST', '/lifecycle', { key: ws.apiKey, body: { level: 'initiative', id: t.initiative, action: 'pause' } });
    expect(await ready()).toEqual([]);
    await app.request('POST', '/lifecycle', { key: ws.apiKey, body: { level: 'initiative', id: t.initiative, action: 'resume' } });
    const b = await startRun(ws, t.B!);
    await app.request('POST', `/runs/${b.body.data.runId}/finish`, { key: ws.apiKey, body: { outcome: 'completed' } });
    expect(await ready()).toEqual([t.C]);
    expect((await list(ws, 'ready=false')).length).toBe(3);
  });

  for (const sort of ['priority', 'updated'] as const) {
    it(`sort=${sort}: paging while writers change tasks serves each task that existed at the first page exactly once`, async () => {
      const ws = await app.createWorkspace();
      const priorities = ['low', 'medium', 'high', 'urgent'] as const;
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push(await work(ws, { title: `t${i}`, priority: priorities[i % 4] }));
      let step = 0;
      const seen = await walk(ws, `sort=${sort}&limit=6`, async () => {
        // Between pages: re-prioritise and rename tasks on both sides of the cursor, start runs,
        // and create new tasks (which are not part of this listing).
        for (let k = 0; k < 4; k++) {
          const target = ids[(step * 7 + k * 11) % ids.length]!;
          await patch(ws, target, { priority: priorities[(step + k) % 4], title: `changed ${step}.${k}` });
        }
        await startRun(ws, ids[(step * 3) % ids.length]!);
        await work(ws, { title: `new ${step}`, priority: 'urgent' });
        step++;
      });
      expect(step).toBeGreaterThan(5);
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual([...ids].sort());
    });
  }

  it('a cursor is good only for its own listing', async () => {
    const ws = await app.createWorkspace();
    for (let i = 0; i < 3; i++) await work(ws, { title: `c${i}` });
    const first = await app.request('GET', '/tasks?limit=1&sort=priority', { key: ws.apiKey });
    const cursor = encodeURIComponent(first.body.meta.nextCursor);
    expect(first.body.meta.asOf).toBeGreaterThan(0);
    const other = await app.request('GET', `/tasks?limit=1&sort=updated&cursor=${cursor}`, { key: ws.apiKey });
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('invalid_cursor');
    const filtered = await app.request('GET', `/tasks?limit=1&status=todo&cursor=${cursor}`, { key: ws.apiKey });
    expect(filtered.body.error.code).toBe('invalid_cursor');
    const elsewhere = await app.request('GET', `/tasks?limit=1&cursor=${cursor}`);
    expect(elsewhere.body.error.code).toBe('invalid_cursor');
  });

  it('the work queue and both orders are read off an index, not a scan of the workspace (PostgreSQL plans)', async () => {
    if (app.runtime.engine !== 'postgres') return;
    // JIT would compile these plans (their cost is estimated in the millions though they read
    // fifty rows) for longer than they run: the service's connections turn it off.
    const [jit] = await query<{ jit: string }>(app.runtime.db, sql`select current_setting('jit') as jit`);
    expect(jit!.jit).toBe('off');
    const ws = await app.createWorkspace();
    const inbox = inboxIds(ws.workspaceId);
    await query(
      app.runtime.db,
      sql`insert into tasks (id, workspace_id, initiative_id, workstream_id, milestone_id, title, priority, created_at, updated_at)
          select gen_random_uuid(), ${ws.workspaceId}, ${inbox.initiativeId}, ${inbox.workstreamId}, ${inbox.milestoneId}, 'bulk ' || g,
                 (array['low','medium','high','urgent'])[1 + g % 4], now() - g * interval '1 second', now() - g * interval '1 second'
          from generate_series(1, 5000) g`,
    );
    await query(app.runtime.db, sql`analyze tasks`);
    const cases: [TaskSort, TaskFilters][] = [
      ['priority', { ready: true }],
      ['priority', { status: ['todo'] }],
      ['priority', {}],
      ['updated', {}],
    ];
    for (const [sort, filters] of cases) {
      const plan = await query<{ 'QUERY PLAN': unknown }>(
        app.runtime.db,
        sql`explain (format json) ${firstPageQuery(app.runtime.db, ws.workspaceId, { sort, filters, limit: 50 }).getSQL()}`,
      );
      const text = JSON.stringify(plan);
      expect(text, `${sort} ${JSON.stringify(filters)}`).toMatch(/"Index Name":"tasks_(queue|priority|updated)_idx"/);
      expect(text, `${sort} ${JSON.stringify(filters)}: ${text.match(/.{300}"Relation Name":"tasks".{200}/g)?.join('\n')}`).not.toMatch(
        /"Node Type":"Seq Scan","Parent Relationship":"[^"]*","Parallel Aware":false,"Async Capable":false,"Relation Name":"tasks"/,
      );
    }
  });
});

describe('GET /tasks/{id}', () => {
  it('shows the task with its placement, receipt, runs, decisions and dependencies; ETag is its version', async () => {
    const ws = await app.createWorkspace();
    const t = await tree(ws);
    const a = await startRun(ws, t.A!);
    await app.request('POST', `/runs/${a.body.data.runId}/checkpoints`, { key: ws.apiKey, body: { label: 'one' } });
    await app.request('POST', `/runs/${a.body.data.runId}/checkpoints`, { key: ws.apiKey, body: { label: 'two' } });
    await app.request('POST', `/runs/${a.body.data.runId}/finish`, { key: ws.apiKey, body: { outcome: 'failed' } });
    const second = await startRun(ws, t.A!);
    await app.request('POST', '/decisions', { key: ws.apiKey, body: { workspace_id: ws.workspaceId, title: 'About A', task_id: t.A } });
    const res = await app.request('GET', `/tasks/${t.A}`, { key: ws.apiKey });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(res.headers.get('etag')).toBe(`"${d.task.aggregateVersion}"`);
    expect(d.task).toMatchObject({ id: t.A, title: 'A', status: 'in_progress' });
    expect(d.placement).toMatchObject({
      workstream: { id: t.W, name: 'Build' },
      milestone: { id: t.M, title: 'Beta' },
      initiative: { id: t.initiative },
    });
    expect(d.runs.map((r: any) => [r.runId, r.checkpoints])).toEqual([
      [second.body.data.runId, 0],
      [a.body.data.runId, 2],
    ]);
    expect(d.decisions.map((x: any) => x.title)).toEqual(['About A']);
    expect(d.receipt).toBeNull(); // tasks of an initiative tree have no receipt; POST /work's do
    const c = await app.request('GET', `/tasks/${t.C}`, { key: ws.apiKey });
    expect(c.body.data.dependencies).toEqual([
      { id: t.A, title: 'A', status: 'in_progress' },
      { id: t.B, title: 'B', status: 'todo' },
    ]);
    const withReceipt = await work(ws, { title: 'with receipt' });
    expect((await app.request('GET', `/tasks/${withReceipt}`, { key: ws.apiKey })).body.data.receipt).toMatchObject({
      status: 'completed',
    });
    // Another workspace's task is a 404, as a missing one.
    expect((await app.request('GET', `/tasks/${t.A}`)).status).toBe(404);
    expect((await app.request('GET', `/tasks/${randomUUID()}`, { key: ws.apiKey })).status).toBe(404);
  });
});

describe('PATCH /tasks/{id}', () => {
  it('changes the fields sent, null clears, one task.updated event with before and after; ETag is the new version', async () => {
    const ws = await app.createWorkspace();
    const id = await work(ws, { title: 'Draft', description: 'first', estimate_hours: 3, priority: 'low' });
    const res = await patch(ws, id, { title: 'Draft v2', description: null, priority: 'high', agent_id: 'writer' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.changed.sort()).toEqual(['agent_id', 'description', 'priority', 'title']);
    expect(res.body.data.task).toMatchObject({
      title: 'Draft v2',
      description: null,
      priority: 'high',
      estimate_hours: 3,
      agent_id: 'writer',
      aggregateVersion: 2,
    });
    expect(res.headers.get('etag')).toBe('"2"');
    const events = await query<{ payload: any; aggregate_version: number }>(
      app.runtime.db,
      sql`select coalesce(payload, payload_text::jsonb) as payload, aggregate_version from ledger_events where aggregate_id = ${id} and event_type = 'task.updated'`,
    );
    expect(events).toEqual([
      {
        aggregate_version: 2,
        payload: {
          task_id: id,
          changes: {
            title: { before: 'Draft', after: 'Draft v2' },
            description: { before: 'first', after: null },
            priority: { before: 'low', after: 'high' },
            agent_id: { before: null, after: 'writer' },
          },
        },
      },
    ]);
    // The tables are what the ledger says.
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('If-Match: the current version applies; a stale one is 412 and changes nothing', async () => {
    const ws = await app.createWorkspace();
    const id = await work(ws, { title: 'Versioned' });
    expect((await patch(ws, id, { title: 'v2' }, { 'if-match': '"1"' })).status).toBe(200);
    await app.expectUnchanged(async () => {
      const stale = await patch(ws, id, { title: 'v3' }, { 'if-match': '"1"' });
      expect(stale.status).toBe(412);
      expect(stale.body.error).toMatchObject({ code: 'precondition_failed', details: { aggregateVersion: 2 } });
    });
    expect((await app.request('GET', `/tasks/${id}`, { key: ws.apiKey })).body.data.task.title).toBe('v2');
    expect((await patch(ws, id, { title: 'v3' }, { 'if-match': 'W/"2"' })).status).toBe(200);
    expect((await patch(ws, id, { title: 'v4' }, { 'if-match': 'two' })).status).toBe(400);
  });

  it('a patch that changes nothing is 200 and writes nothing; status, unknown fields and bad values are 400', async () => {
    const ws = await app.createWorkspace();
    const id = await work(ws, { title: 'Same', priority: 'high' });
    await app.expectUnchanged(async () => {
      const same = await patch(ws, id, { title: 'Same', priority: 'high' });
      expect(same.status).toBe(200);
      expect(same.body.data.changed).toEqual([]);
      expect(same.headers.get('etag')).toBe('"1"');
      expect((await patch(ws, id, {})).status).toBe(200);
      for (const body of [
        { status: 'done' },
        { colour: 'red' },
        { title: null },
        { priority: 'soon' },
        { estimate_hours: -1 },
        { title: '' },
        // POST /work's bound (the specification's), not a looser one of its own.
        { title: 'x'.repeat(241) },
      ]) {
        const bad = await patch(ws, id, body);
        expect(bad.status, JSON.stringify(body)).toBe(400);
      }
    });
  });

  it('another workspace’s task is 404 and unchanged; a viewer cannot patch; Idempotency-Key replays', async () => {
    const ws = await app.createWorkspace();
    const id = await work(ws, { title: 'Mine' });
    await app.expectUnchanged(async () => {
      expect((await app.request('PATCH', `/tasks/${id}`, { body: { title: 'Theirs' } })).status).toBe(404);
    });
    const viewer = await app.member('viewer', ws.workspaceId);
    expect((await app.request('PATCH', `/tasks/${id}`, { session: viewer.session, body: { title: 'x' } })).status).toBe(403);
    const first = await patch(ws, id, { title: 'Once' }, { 'idempotency-key': 'patch-1' });
    const again = await patch(ws, id, { title: 'Once' }, { 'idempotency-key': 'patch-1' });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const conflict = await patch(ws, id, { title: 'Twice' }, { 'idempotency-key': 'patch-1' });
    expect(conflict.status).toBe(422);
    const counted = await query<{ n: number }>(
      app.runtime.db,
      sql`select count(*)::int as n from ledger_events where aggregate_id = ${id} and event_type = 'task.updated'`,
    );
    expect(counted[0]!.n).toBe(1);
  });
});

describe('picking up work', () => {
  it('twenty agents start the same ready task at once: one 201, nineteen 409, and the task leaves ready at once', async () => {
    const ws = await app.createWorkspace();
    const id = await work(ws, { title: 'Contested', priority: 'urgent' });
    expect((await list(ws, 'ready=true')).map((x) => x.id)).toEqual([id]);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => startRun(ws, id, `agent-${i}`)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('invalid_state_transition');
    expect(await list(ws, 'ready=true')).toEqual([]);
    const runs = await query<{ n: number }>(app.runtime.db, sql`select count(*)::int as n from runs where task_id = ${id}`);
    expect(runs[0]!.n).toBe(1);
  });
});

describe('GET /runs, /initiatives, /receipts', () => {
  it('runs: newest first, by task, status and agent, paged; another workspace’s are not listed', async () => {
    const ws = await app.createWorkspace();
    const a = await work(ws, { title: 'a' });
    const b = await work(ws, { title: 'b' });
    const r1 = (await startRun(ws, a, 'alice')).body.data.runId;
    await app.request('POST', `/runs/${r1}/checkpoints`, { key: ws.apiKey, body: { label: 'half' } });
    await app.request('POST', `/runs/${r1}/finish`, { key: ws.apiKey, body: { outcome: 'failed' } });
    const r2 = (await startRun(ws, a, 'bob')).body.data.runId;
    const r3 = (await startRun(ws, b, 'alice')).body.data.runId;
    const runs = async (q: string) => {
      const res = await app.request('GET', `/runs?${q}`, { key: ws.apiKey });
      expect(res.status, res.text).toBe(200);
      return res.body.data as any[];
    };
    expect((await runs('')).map((r) => r.runId)).toEqual([r3, r2, r1]);
    expect((await runs(`task_id=${a}`)).map((r) => [r.runId, r.checkpoint_count])).toEqual([
      [r2, 0],
      [r1, 1],
    ]);
    expect((await runs('status=failed')).map((r) => r.runId)).toEqual([r1]);
    expect((await runs('status=running&status=failed')).length).toBe(3);
    expect((await runs('agent_id=alice')).map((r) => r.runId)).toEqual([r3, r1]);
    // Paged one at a time: the same three, once each.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await app.request('GET', `/runs?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
        key: ws.apiKey,
      });
      seen.push(...res.body.data.map((r: any) => r.runId));
      cursor = res.body.meta.nextCursor;
    } while (cursor);
    expect(seen).toEqual([r3, r2, r1]);
    expect((await app.request('GET', '/runs')).body.data.map((r: any) => r.runId)).not.toContain(r1);
    const wrong = await app.request(
      'GET',
      `/runs?agent_id=bob&cursor=${encodeURIComponent((await app.request('GET', '/runs?limit=1', { key: ws.apiKey })).body.meta.nextCursor)}`,
      {
        key: ws.apiKey,
      },
    );
    expect(wrong.body.error.code).toBe('invalid_cursor');
  });

  it('initiatives: newest first with task counts by status; receipts: newest first, by task', async () => {
    const ws = await app.createWorkspace();
    const t = await tree(ws);
    await startRun(ws, t.A!);
    const res = await app.request('GET', '/initiatives?limit=1', { key: ws.apiKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.data[0]).toMatchObject({ id: t.initiative, task_counts: { todo: 2, in_progress: 1, done: 0 } });
    const next = await app.request('GET', `/initiatives?cursor=${encodeURIComponent(res.body.meta.nextCursor)}`, { key: ws.apiKey });
    expect(next.body.data.map((i: any) => i.title)).toEqual(['Inbox']);
    expect(next.body.meta.hasMore).toBe(false);

    const x = await work(ws, { title: 'x' });
    const y = await work(ws, { title: 'y' });
    const all = await app.request('GET', '/receipts', { key: ws.apiKey });
    expect(all.body.data.map((r: any) => r.task_id)).toEqual([y, x]);
    const one = await app.request('GET', `/receipts?task_id=${x}`, { key: ws.apiKey });
    expect(one.body.data).toEqual([expect.objectContaining({ task_id: x, status: 'completed', summary: 'x' })]);
    expect((await app.request('GET', `/receipts?task_id=${x}`)).body.data).toEqual([]);
  });
});
