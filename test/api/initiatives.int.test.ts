/** POST /initiatives and GET /initiatives/{id}: the tree in one call, read back. */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { startTestApp, type TestApp } from '../support/app';
import { launchTree } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('POST /initiatives', () => {
  it('creates an initiative with only a title, with the defaults', async () => {
    const res = await app.request('POST', '/initiatives', { body: { title: 'Just a title' } });
    expect(res.status).toBe(201);
    expect(res.body.data.initiative).toMatchObject({
      title: 'Just a title',
      status: 'active',
      summary: '',
      visibility: 'workspace',
      model_tier: 'standard',
      execution_policy: { mode: 'sequential', max_concurrent_agents: 1 },
      is_inbox: false,
      aggregateVersion: 1,
      workspace_id: app.ws.workspaceId,
    });
    expect(res.body.data.tree).toEqual({ workstreams: [], edges: [], agents: [], estimate_hours: 0 });
    expect(res.body.meta).toEqual({ apiVersion: '1', workspaceId: app.ws.workspaceId, projectionStatus: 'live_rows', duplicate: false });
  });

  it('creates a whole tree in one transaction with one event per node, and reads it back', async () => {
    const before = await app.counts();
    const res = await app.request('POST', '/initiatives', { body: launchTree });
    expect(res.status).toBe(201);
    const { initiative, tree, refs } = res.body.data;
    expect(Object.keys(refs).sort()).toEqual(['api', 'build', 'interview', 'm-beta', 'm-ga', 'm-interviews', 'recruit', 'research']);
    // Siblings keep the order they were sent in.
    expect(tree.workstreams.map((w: { name: string }) => w.name)).toEqual(['Research', 'Build']);
    expect(tree.workstreams[0].milestones[0].tasks.map((t: { title: string }) => t.title)).toEqual([
      'Recruit ten customers',
      'Run interviews',
    ]);
    expect(tree.workstreams[1].milestones.map((m: { title: string }) => m.title)).toEqual(['Beta', 'GA']);
    const research = tree.workstreams.find((w: { id: string }) => w.id === refs.research);
    const build = tree.workstreams.find((w: { id: string }) => w.id === refs.build);
    expect(build.depends_on).toEqual([refs.research]);
    expect(research.estimate_hours).toBe(13.5);
    expect(build.estimate_hours).toBe(20);
    expect(tree.estimate_hours).toBe(33.5);
    const interview = research.milestones[0].tasks.find((t: { id: string }) => t.id === refs.interview);
    expect(interview).toMatchObject({
      type: 'research',
      status: 'todo',
      agent_id: 'scout',
      depends_on: [refs.recruit],
      estimate_hours: 10.5,
    });
    expect(tree.edges).toEqual(
      expect.arrayContaining([
        { level: 'workstream', from: refs.research, to: refs.build },
        { level: 'task', from: refs.recruit, to: refs.interview },
      ]),
    );
    expect(tree.agents).toEqual([
      { agent_id: 'coder', workstreams: [], tasks: [refs.api] },
      { agent_id: 'scout', workstreams: [refs.research], tasks: [refs.interview] },
    ]);

    const after = await app.counts();
    expect(after.initiatives! - before.initiatives!).toBe(1);
    expect(after.tasks! - before.tasks!).toBe(3);
    // initiative + 2 workstreams + 3 milestones + 3 tasks
    expect(after.events! - before.events!).toBe(9);
    const events = await app.request(
      'GET',
      '/events/stream?type=initiative.created&type=workstream.created&type=milestone.created&type=task.created&limit=100',
    );
    const mine = events.body.data.filter((e: { payload: { initiative_id?: string; id: string } }) =>
      [initiative.id, ...Object.values(refs)].includes(e.payload.id),
    );
    expect(mine.map((e: { eventType: string }) => e.eventType)).toEqual([
      'initiative.created',
      'workstream.created',
      'milestone.created',
      'task.created',
      'task.created',
      'workstream.created',
      'milestone.created',
      'task.created',
      'milestone.created',
    ]);

    const read = await app.request('GET', `/initiatives/${initiative.id}?include=tree`);
    expect(read.status).toBe(200);
    expect(read.body.data.initiative).toEqual(initiative);
    expect(read.body.data.tree).toEqual(tree);
    expect(read.body.meta).toEqual({ apiVersion: '1', workspaceId: app.ws.workspaceId, projectionStatus: 'live_rows' });
  });

  it('work placed in a milestone of the tree shows in it', async () => {
    const { initiative, refs } = (await app.request('POST', '/initiatives', { body: launchTree })).body.data;
    const work = await app.request('POST', '/work', {
      body: {
        title: 'Late addition',
        estimate_hours: 2,
        initiative_id: initiative.id,
        workstream_id: refs.build,
        milestone_id: refs['m-ga'],
      },
    });
    expect(work.status).toBe(201);
    const tree = (await app.request('GET', `/initiatives/${initiative.id}?include=tree`)).body.data.tree;
    const ga = tree.workstreams
      .find((w: { id: string }) => w.id === refs.build)
      .milestones.find((m: { id: string }) => m.id === refs['m-ga']);
    expect(ga.tasks.map((t: { title: string }) => t.title)).toEqual(['Late addition']);
    expect(tree.estimate_hours).toBe(35.5);
  });

  const bad: [string, unknown, string][] = [
    [
      'a cycle',
      {
        title: 't',
        workstreams: [
          { ref: 'a', name: 'A', depends_on: ['b'] },
          { ref: 'b', name: 'B', depends_on: ['a'] },
        ],
      },
      'dependency cycle',
    ],
    ['an unknown ref', { title: 't', workstreams: [{ ref: 'a', name: 'A', depends_on: ['zzz'] }] }, 'unknown ref zzz'],
    [
      'an unknown task ref',
      { title: 't', workstreams: [{ name: 'W', milestones: [{ title: 'M', tasks: [{ ref: 'a', title: 'A', depends_on: ['nope'] }] }] }] },
      'unknown ref nope',
    ],
    [
      'a task dependency cycle',
      {
        title: 't',
        workstreams: [
          {
            name: 'W',
            milestones: [
              {
                title: 'M',
                tasks: [
                  { ref: 'x', title: 'X', depends_on: ['z'] },
                  { ref: 'y', title: 'Y', depends_on: ['x'] },
                  { ref: 'z', title: 'Z', depends_on: ['y'] },
                ],
              },
            ],
          },
        ],
      },
      'dependency cycle',
    ],
    [
      'a task depending on a task of another milestone',
      {
        title: 't',
        workstreams: [
          {
            name: 'W',
            milestones: [
              { title: 'M1', tasks: [{ ref: 'p', title: 'P' }] },
              { title: 'M2', tasks: [{ ref: 'q', title: 'Q', depends_on: ['p'] }] },
            ],
          },
        ],
      },
      '',
    ],
    [
      'more than 2000 nodes',
      {
        title: 't',
        workstreams: Array.from({ length: 5 }, (_, w) => ({
          name: `W${w}`,
          milestones: [{ title: 'M', tasks: Array.from({ length: 400 }, (_, t) => ({ title: `T${t}` })) }],
        })),
      },
      '2000',
    ],
    ['an unknown visibility', { title: 't', visibility: 'public' }, ''],
    ['an unknown model tier', { title: 't', model_tier: 'ultra' }, ''],
    ['an unknown execution mode', { title: 't', execution_policy: { mode: 'random' } }, ''],
    ['zero concurrent agents', { title: 't', execution_policy: { max_concurrent_agents: 0 } }, ''],
    [
      'an unknown task type',
      { title: 't', workstreams: [{ name: 'W', milestones: [{ title: 'M', tasks: [{ title: 'x', type: 'chat' }] }] }] },
      '',
    ],
    [
      'a negative estimate',
      { title: 't', workstreams: [{ name: 'W', milestones: [{ title: 'M', tasks: [{ title: 'x', estimate_hours: -2 }] }] }] },
      '',
    ],
    ['no title', {}, ''],
  ];
  for (const [name, body, message] of bad) {
    it(`refuses ${name} with 400 and writes nothing`, async () => {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/initiatives', { body });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
        if (message) expect(JSON.stringify(res.body.error)).toContain(message);
      });
    });
  }

  it('writes the tree in one transaction: a failure at the last task leaves no node and no event', async () => {
    // A database-side failure after the initiative, workstreams, milestones and first tasks were written.
    await app.runtime.db.execute(sql`
      create or replace function fail_on_boom() returns trigger language plpgsql as $$
      begin if new.title = 'boom' then raise exception 'injected failure'; end if; return new; end $$`);
    await app.runtime.db.execute(
      sql`create trigger tasks_fail_on_boom before insert on tasks for each row execute function fail_on_boom()`,
    );
    try {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/initiatives', {
          body: {
            title: 'Half a tree',
            workstreams: [
              { name: 'W', milestones: [{ title: 'M', tasks: [{ title: 'fine' }, { title: 'also fine' }, { title: 'boom' }] }] },
            ],
          },
          headers: { 'idempotency-key': `boom-${randomUUID()}` },
        });
        expect(res.status).toBe(500);
        expect(res.body.error.code).toBe('internal_error');
        expect(res.text).not.toContain('injected');
      });
      const [row] = await query<{ n: string }>(app.runtime.db, sql`select count(*) as n from workstreams where name = 'W'`);
      expect(Number(row!.n)).toBe(0);
    } finally {
      await app.runtime.db.execute(sql`drop trigger tasks_fail_on_boom on tasks`);
    }
  });

  it('names the cycle’s path in the message and details', async () => {
    const res = await app.request('POST', '/initiatives', {
      body: {
        title: 't',
        workstreams: [
          { ref: 'a', name: 'A', depends_on: ['c'] },
          { ref: 'b', name: 'B', depends_on: ['a'] },
          { ref: 'c', name: 'C', depends_on: ['b'] },
        ],
      },
    });
    expect(res.body.error.message).toMatch(/dependency cycle: \w → \w → \w → \w/);
    expect(res.body.error.details.issues[0].path).toMatch(/^workstreams\.\d\.depends_on$/);
  });

  it('refuses unknown fields anywhere in the tree', async () => {
    const res = await app.request('POST', '/initiatives', { body: { title: 't', workstreams: [{ name: 'W', owner: 'me' }] } });
    expect(res.body.error).toMatchObject({ code: 'unknown_field', details: { fields: ['workstreams.0.owner'] } });
  });

  it('is idempotent with a key; another workspace’s workspace_id is 403', async () => {
    const key = `i-${randomUUID()}`;
    const first = await app.request('POST', '/initiatives', { body: launchTree, headers: { 'idempotency-key': key } });
    const again = await app.request('POST', '/initiatives', { body: launchTree, headers: { 'idempotency-key': key } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, meta: { ...first.body.meta, duplicate: true } });
    const other = await app.createWorkspace();
    const res = await app.request('POST', '/initiatives', { body: { title: 't', workspace_id: other.workspaceId } });
    expect(res.status).toBe(403);
  });
});

describe('GET /initiatives/{initiativeId}', () => {
  let id: string;
  beforeAll(async () => {
    id = (await app.request('POST', '/initiatives', { body: launchTree })).body.data.initiative.id;
  });

  it('leaves out the tree unless included', async () => {
    const res = await app.request('GET', `/initiatives/${id}`);
    expect(res.body.data.tree).toBeUndefined();
    expect(res.body.data.initiative.id).toBe(id);
  });

  it('include=launches is an empty list with a note', async () => {
    const res = await app.request('GET', `/initiatives/${id}?include=tree,launches&workspace_id=${app.ws.workspaceId}`);
    expect(res.body.data.launches).toEqual([]);
    expect(res.body.data.tree.workstreams).toHaveLength(2);
    expect(res.body.meta.notes).toEqual([expect.stringContaining('launches')]);
  });

  it('refuses an unknown include, a bad UUID, an unknown id, and another workspace', async () => {
    const unknownInclude = await app.request('GET', `/initiatives/${id}?include=tree,budget`);
    expect(unknownInclude.status).toBe(400);
    expect(unknownInclude.body.error.details.issues[0].path).toBe('query.include');
    const badId = await app.request('GET', '/initiatives/not-a-uuid');
    expect(badId.status).toBe(400);
    // Named where the caller put it (docs/contract.md §10.8).
    expect(badId.body.error.details.issues[0].path).toMatch(/^path\./);
    expect((await app.request('GET', `/initiatives/${randomUUID()}`)).status).toBe(404);
    const other = await app.createWorkspace();
    expect((await app.request('GET', `/initiatives/${id}?workspace_id=${other.workspaceId}`)).status).toBe(403);
    expect((await app.request('GET', `/initiatives/${id}`, { key: other.apiKey })).status).toBe(404);
  });

  it('a viewer reads it; a viewer cannot create one', async () => {
    const viewer = await app.member('viewer');
    expect((await app.request('GET', `/initiatives/${id}?include=tree`, { session: viewer.session })).status).toBe(200);
    const refused = await app.request('POST', '/initiatives', { session: viewer.session, body: { title: 'no' } });
    expect(refused.status).toBe(403);
  });
});
