/** POST /work: the specification’s contract and docs/contract.md §4.1, and bad input that changes nothing. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initiatives, milestones, workstreams } from '@/db/schema';
import { inboxIds } from '@/server/domain/workspaces/ids';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MS_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /work with only a title', () => {
  it('answers 201 with the task, the receipt and the accepted event, placed in the Inbox', async () => {
    const res = await app.request('POST', '/work', { body: { title: 'Write the brief' } });
    expect(res.status).toBe(201);
    const { data, meta } = res.body;
    expect(meta).toEqual({ apiVersion: '1', workspaceId: app.ws.workspaceId, duplicate: false });
    expect(data.taskId).toMatch(UUID);
    expect(data.receiptId).toMatch(UUID);
    expect(data.eventId).toMatch(UUID);
    expect(data.aggregateVersion).toBe(1);
    expect(data.eventHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(data.duplicate).toBe(false);
    expect(data.task).toMatchObject({ id: data.taskId, title: 'Write the brief', status: 'todo', priority: 'medium' });
    expect(data.task.updated_at).toMatch(MS_TIMESTAMP);
    expect(data.receipt).toEqual(
      expect.objectContaining({ id: data.receiptId, status: 'completed', summary: 'Write the brief', task_id: data.taskId }),
    );
    const inbox = inboxIds(app.ws.workspaceId);
    expect(data.task).toMatchObject({
      initiative_id: inbox.initiativeId,
      workstream_id: inbox.workstreamId,
      milestone_id: inbox.milestoneId,
    });

    const events = await app.request('GET', '/events/stream?type=work.created&limit=100');
    const event = events.body.data.find((e: { id: string }) => e.id === data.eventId);
    expect(event).toMatchObject({
      eventType: 'work.created',
      aggregateType: 'task',
      aggregateId: data.taskId,
      aggregateVersion: 1,
      eventHash: data.eventHash,
      actorType: 'api_key',
      actorId: app.ws.apiKeyId,
      ownerId: app.ws.ownerUserId,
      workspaceId: app.ws.workspaceId,
      idempotencyKey: null,
    });
    expect(event.payload).toMatchObject({ task: { id: data.taskId }, receipt: { id: data.receiptId } });
    expect(event.causationId).toBe(res.headers.get('x-request-id'));
  });

  it('keeps every optional field it is given', async () => {
    const res = await app.request('POST', '/work', {
      body: { title: 'Estimate', description: 'Longer text', priority: 'urgent', estimate_hours: 2.5 },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.task).toMatchObject({ description: 'Longer text', priority: 'urgent', estimate_hours: 2.5 });
  });

  it('records the trace headers on the event', async () => {
    const correlationId = randomUUID();
    const manifest = `sha256:${'c'.repeat(64)}`;
    const res = await app.request('POST', '/work', {
      body: { title: 'Traced' },
      headers: { 'x-correlation-id': correlationId, 'x-context-manifest-digest': manifest },
    });
    expect(res.status).toBe(201);
    const page = await app.request('GET', '/events/stream?type=work.created&limit=100');
    const event = page.body.data.find((e: { id: string }) => e.id === res.body.data.eventId);
    expect(event).toMatchObject({ correlationId, contextManifestDigest: manifest });
  });
});

describe('POST /work with explicit placement', () => {
  let other: { initiativeId: string; workstreamId: string; milestoneId: string };

  beforeAll(async () => {
    // A second hierarchy in the same workspace, written directly: POST /initiatives is another issue.
    const ws = app.ws.workspaceId;
    other = { initiativeId: randomUUID(), workstreamId: randomUUID(), milestoneId: randomUUID() };
    await app.runtime.db.insert(initiatives).values({
      id: other.initiativeId,
      workspaceId: ws,
      title: 'Launch',
      executionPolicy: { mode: 'parallel', max_concurrent_agents: 2 },
    });
    await app.runtime.db
      .insert(workstreams)
      .values({ id: other.workstreamId, workspaceId: ws, initiativeId: other.initiativeId, name: 'Docs' });
    await app.runtime.db
      .insert(milestones)
      .values({ id: other.milestoneId, workspaceId: ws, workstreamId: other.workstreamId, title: 'Beta' });
  });

  it('places the task where all three ids say', async () => {
    const res = await app.request('POST', '/work', {
      body: { title: 'Placed', initiative_id: other.initiativeId, workstream_id: other.workstreamId, milestone_id: other.milestoneId },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.task).toMatchObject({
      initiative_id: other.initiativeId,
      workstream_id: other.workstreamId,
      milestone_id: other.milestoneId,
    });
  });

  it('accepts the ids in upper case and records them as the tables hold them', async () => {
    const res = await app.request('POST', '/work', {
      body: {
        title: 'Upper',
        initiative_id: other.initiativeId.toUpperCase(),
        workstream_id: other.workstreamId.toUpperCase(),
        milestone_id: other.milestoneId.toUpperCase(),
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.task).toMatchObject({ initiative_id: other.initiativeId, milestone_id: other.milestoneId });
  });

  it('refuses ids that do not nest (400) and writes nothing', async () => {
    const inbox = inboxIds(app.ws.workspaceId);
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work', {
        body: { title: 'Bad nest', initiative_id: other.initiativeId, workstream_id: inbox.workstreamId, milestone_id: other.milestoneId },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['workstream_id', 'milestone_id']);
    });
  });

  it('refuses only some of the three ids (400)', async () => {
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/work', { body: { title: 'Partial', initiative_id: other.initiativeId } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.issues.map((i: { path: string }) => i.path)).toEqual(['workstream_id', 'milestone_id']);
    });
  });

  it('answers 404 for ids that do not exist, or exist in another workspace', async () => {
    const stranger = await app.createWorkspace();
    const theirs = inboxIds(stranger.workspaceId);
    await app.expectUnchanged(async () => {
      for (const body of [
        { title: 'Theirs', initiative_id: theirs.initiativeId, workstream_id: theirs.workstreamId, milestone_id: theirs.milestoneId },
        { title: 'Nowhere', initiative_id: randomUUID(), workstream_id: other.workstreamId, milestone_id: other.milestoneId },
      ]) {
        const res = await app.request('POST', '/work', { body });
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
    });
  });
});

describe('POST /work field rules', () => {
  const tooLong = (n: number) => 'x'.repeat(n);
  const cases: [string, Record<string, unknown>, string][] = [
    ['a missing title', {}, 'validation_failed'],
    ['an empty title', { title: '' }, 'validation_failed'],
    ['a title of only spaces', { title: '   ' }, 'validation_failed'],
    ['a title of 241 characters', { title: tooLong(241) }, 'validation_failed'],
    ['a title that is not a string', { title: 42 }, 'validation_failed'],
    ['a description of 4001 characters', { title: 't', description: tooLong(4001) }, 'validation_failed'],
    ['an unknown priority', { title: 't', priority: 'critical' }, 'validation_failed'],
    ['a negative estimate', { title: 't', estimate_hours: -1 }, 'validation_failed'],
    ['an estimate sent as a string', { title: 't', estimate_hours: '5' }, 'validation_failed'],
    [
      'a placement id that is not a UUID',
      { title: 't', initiative_id: 'abc', workstream_id: 'abc', milestone_id: 'abc' },
      'validation_failed',
    ],
    ['a NUL character', { title: 'a\u0000b' }, 'validation_failed'],
    ['a lone surrogate', { title: 'a\ud800b' }, 'validation_failed'],
    ['an unknown field', { title: 't', status: 'done' }, 'unknown_field'],
    ['a server-owned field', { title: 't', id: randomUUID() }, 'unknown_field'],
  ];

  for (const [name, body, code] of cases) {
    it(`refuses ${name} with 400 ${code}, writing nothing and storing no idempotency response`, async () => {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', '/work', { body, headers: { 'idempotency-key': `bad-${randomUUID()}` } });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe(code);
        expect(res.body.error.requestId).toBe(res.headers.get('x-request-id'));
      });
    });
  }

  it('names the unknown fields', async () => {
    const res = await app.request('POST', '/work', { body: { title: 't', status: 'done', owner: 'me' } });
    expect(res.body.error.details.fields).toEqual(['status', 'owner']);
  });

  it('lists each broken rule with its path', async () => {
    const res = await app.request('POST', '/work', { body: { title: '', priority: 'x' } });
    expect(res.body.error.details.issues.map((i: { path: string }) => i.path).sort()).toEqual(['priority', 'title']);
  });

  it('counts characters as code points: 240 emoji are a valid title', async () => {
    const res = await app.request('POST', '/work', { body: { title: '😀'.repeat(240) } });
    expect(res.status).toBe(201);
    expect([...res.body.data.task.title]).toHaveLength(240);
  });

  it('accepts the limits themselves', async () => {
    const res = await app.request('POST', '/work', {
      body: { title: tooLong(240), description: tooLong(4000), estimate_hours: 0 },
    });
    expect(res.status).toBe(201);
  });
});
