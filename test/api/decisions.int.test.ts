/** Decisions over REST: raise, poll, list, attention (docs/contract.md §2–§4.3, and the specification’s POST /decisions). */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';

let app: TestApp;
let other: TestWorkspace;
beforeAll(async () => {
  app = await startTestApp();
  other = await app.createWorkspace();
});
afterAll(async () => {
  await app?.close();
});

const MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const raise = (body: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, ...body }, ...opts });
const attention = (id: string, body: Record<string, unknown> = {}, key?: string) =>
  app.request('POST', `/decisions/${id}/attention`, { body, key });

async function newTask(): Promise<{ taskId: string; initiativeId: string; workstreamId: string }> {
  const res = await app.request('POST', '/work', { body: { title: 'needs a ruling' } });
  return { taskId: res.body.data.taskId, initiativeId: res.body.data.task.initiative_id, workstreamId: res.body.data.task.workstream_id };
}

describe('POST /decisions', () => {
  it('with only workspace_id and title: option_select, urgent, blocks_task false, pending (seed defaults)', async () => {
    const res = await raise({ title: 'Ship it?' });
    expect(res.status).toBe(201);
    const d = res.body.decision;
    expect(d).toMatchObject({
      workspace_id: app.ws.workspaceId,
      title: 'Ship it?',
      description: null,
      shape: 'option_select',
      urgency: 'urgent',
      blocks_task: false,
      status: 'pending',
      resolution: null,
      attention: null,
      shape_context: {
        options: [
          { id: 'approve', label: 'Approve' },
          { id: 'decline', label: 'Decline' },
        ],
      },
      created_by: { type: 'api_key', id: app.ws.apiKeyId },
      on_timeout: 'expire',
      due_at: null,
    });
    expect(d.created_at).toMatch(MS);
    expect(d.updated_at).toMatch(MS);
    expect(d.history.map((h: { event_type: string }) => h.event_type)).toEqual(['decision.created']);
  });

  it('keeps every field it is given and derives initiative and workstream from the task', async () => {
    const task = await newTask();
    const due = new Date(Date.now() + 3_600_000).toISOString();
    const res = await raise({
      title: 'Pick a vendor',
      description: 'Three quotes attached.',
      shape: 'budget_approval',
      urgency: 'critical',
      blocks_task: true,
      task_id: task.taskId,
      due_at: due,
      on_timeout: 'decline',
      shape_context: {
        options: [
          { id: 'a', label: 'Vendor A', description: 'cheapest' },
          { id: 'b', label: 'Vendor B' },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.decision).toMatchObject({
      shape: 'budget_approval',
      urgency: 'critical',
      blocks_task: true,
      task_id: task.taskId,
      initiative_id: task.initiativeId,
      workstream_id: task.workstreamId,
      run_id: null,
      due_at: due,
      on_timeout: 'decline',
      shape_context: {
        options: [
          { id: 'a', label: 'Vendor A', description: 'cheapest' },
          { id: 'b', label: 'Vendor B' },
        ],
      },
    });
  });

  it('gives other shapes no options unless sent', async () => {
    const res = await raise({ title: 'Generic', shape: 'generic' });
    expect(res.body.decision.shape_context.options).toEqual([]);
    const multi = await raise({ title: 'Multi', shape: 'option_multiselect' });
    expect(multi.body.decision.shape_context.options.map((o: { id: string }) => o.id)).toEqual(['approve', 'decline']);
  });

  it('refuses the workspace_id of another workspace with 403, writing nothing', async () => {
    await app.expectUnchanged(async () => {
      const res = await raise({ workspace_id: other.workspaceId, title: 'Theirs' });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    });
  });

  const bad: [string, Record<string, unknown>, string, number?][] = [
    ['no workspace_id', { workspace_id: undefined, title: 't' }, 'validation_failed'],
    ['no title', { title: undefined }, 'validation_failed'],
    ['a title of 501 characters', { title: 'x'.repeat(501) }, 'validation_failed'],
    ['a description of 8001 characters', { title: 't', description: 'x'.repeat(8001) }, 'validation_failed'],
    ['an unknown shape', { title: 't', shape: 'vote' }, 'validation_failed'],
    ['an unknown urgency', { title: 't', urgency: 'now' }, 'validation_failed'],
    ['blocks_task as a string', { title: 't', blocks_task: 'true' }, 'validation_failed'],
    ['blocks_task without a task', { title: 't', blocks_task: true }, 'validation_failed'],
    ['one option', { title: 't', shape_context: { options: [{ id: 'a', label: 'A' }] } }, 'validation_failed'],
    [
      '21 options',
      { title: 't', shape_context: { options: Array.from({ length: 21 }, (_, i) => ({ id: `o${i}`, label: 'x' })) } },
      'validation_failed',
    ],
    [
      'repeated option ids',
      {
        title: 't',
        shape_context: {
          options: [
            { id: 'a', label: 'A' },
            { id: 'a', label: 'B' },
          ],
        },
      },
      'validation_failed',
    ],
    [
      'an option id of 121 characters',
      {
        title: 't',
        shape_context: {
          options: [
            { id: 'x'.repeat(121), label: 'A' },
            { id: 'b', label: 'B' },
          ],
        },
      },
      'validation_failed',
    ],
    [
      'an unknown option field',
      {
        title: 't',
        shape_context: {
          options: [
            { id: 'a', label: 'A', score: 1 },
            { id: 'b', label: 'B' },
          ],
        },
      },
      'unknown_field',
    ],
    ['a due_at in the past', { title: 't', due_at: '2020-01-01T00:00:00.000Z' }, 'validation_failed'],
    ['a due_at that is not a timestamp', { title: 't', due_at: 'tomorrow' }, 'validation_failed'],
    ['an unknown on_timeout', { title: 't', on_timeout: 'escalate' }, 'validation_failed'],
    ['an unknown field', { title: 't', priority: 'high' }, 'unknown_field'],
    ['a server-owned field', { title: 't', status: 'approved' }, 'unknown_field'],
    ['a task of no workspace', { title: 't', task_id: randomUUID() }, 'not_found', 404],
    ['a run that does not exist', { title: 't', run_id: randomUUID() }, 'not_found', 404],
  ];
  for (const [name, body, code, status = 400] of bad) {
    it(`refuses ${name} (${status} ${code}), writing nothing`, async () => {
      await app.expectUnchanged(async () => {
        const res = await raise(body, { headers: { 'idempotency-key': `bad-${randomUUID()}` } });
        expect(res.status, res.text).toBe(status);
        expect(res.body.error.code).toBe(code);
      });
    });
  }

  it('refuses a task of another workspace with 404', async () => {
    const theirs = await app.request('POST', '/work', { key: other.apiKey, body: { title: 'theirs' } });
    const res = await raise({ title: 't', task_id: theirs.body.data.taskId });
    expect(res.status).toBe(404);
  });

  it('Idempotency-Key: same key and body return the original decision; another body is 422', async () => {
    const key = `d-${randomUUID()}`;
    const first = await raise({ title: 'Once', urgency: 'standard' }, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    const before = await app.counts();
    const again = await raise({ title: 'Once', urgency: 'standard' }, { headers: { 'idempotency-key': key } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await app.counts()).toEqual(before);
    const conflict = await raise({ title: 'Twice', urgency: 'standard' }, { headers: { 'idempotency-key': key } });
    expect(conflict.status).toBe(422);
    expect(conflict.body.error.code).toBe('idempotency_conflict');
    expect(await app.counts()).toEqual(before);
  });

  it('a signed-in owner can raise one; a viewer cannot', async () => {
    const owner = await app.member('owner');
    const res = await app.request('POST', '/decisions', {
      session: owner.session,
      body: { workspace_id: app.ws.workspaceId, title: 'Human ask' },
    });
    expect(res.status).toBe(201);
    expect(res.body.decision.created_by).toEqual({ type: 'human', id: owner.userId });
    const viewer = await app.member('viewer');
    const refused = await app.request('POST', '/decisions', {
      session: viewer.session,
      body: { workspace_id: app.ws.workspaceId, title: 'No' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
  });
});

describe('GET /decisions/{id} and GET /decisions', () => {
  it('polls a decision; another workspace sees 404; a malformed id is 400', async () => {
    const created = (await raise({ title: 'Poll me' })).body.decision;
    const res = await app.request('GET', `/decisions/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body.decision).toEqual(created);
    expect((await app.request('GET', `/decisions/${created.id}`, { key: other.apiKey })).status).toBe(404);
    expect((await app.request('GET', `/decisions/${randomUUID()}`)).status).toBe(404);
    expect((await app.request('GET', '/decisions/not-a-uuid')).status).toBe(400);
    expect((await app.request('GET', `/decisions/${created.id.toUpperCase()}`)).body.decision.id).toBe(created.id);
  });

  it('lists newest first, filters by status and urgency, and pages by cursor', async () => {
    const ws = await app.createWorkspace();
    const made: string[] = [];
    for (const urgency of ['deferred', 'standard', 'urgent', 'critical', 'standard']) {
      const r = await app.request('POST', '/decisions', {
        key: ws.apiKey,
        body: { workspace_id: ws.workspaceId, title: urgency, urgency },
      });
      made.push(r.body.decision.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/decisions?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await app.request('GET', q, { key: ws.apiKey });
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((d: { id: string }) => d.id));
      cursor = page.body.meta.nextCursor;
      expect(page.body.meta.hasMore).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([...made].reverse());

    const standard = await app.request('GET', '/decisions?urgency=standard', { key: ws.apiKey });
    expect(standard.body.data).toHaveLength(2);
    const two = await app.request('GET', '/decisions?urgency=critical&urgency=deferred', { key: ws.apiKey });
    expect(two.body.data.map((d: { urgency: string }) => d.urgency).sort()).toEqual(['critical', 'deferred']);
    const approved = await app.request('GET', '/decisions?status=approved', { key: ws.apiKey });
    expect(approved.body.data).toEqual([]);

    const forged = await app.request('GET', '/decisions?cursor=abc.def', { key: ws.apiKey });
    expect(forged.body.error.code).toBe('invalid_cursor');
    const first = await app.request('GET', '/decisions?limit=1', { key: ws.apiKey });
    const foreign = await app.request('GET', `/decisions?cursor=${first.body.meta.nextCursor}`);
    expect(foreign.body.error.code).toBe('invalid_cursor');
    // A cursor is a place in one listing: sent back with other filters it is refused, as every list's is.
    const otherFilters = await app.request('GET', `/decisions?urgency=critical&cursor=${first.body.meta.nextCursor}`, { key: ws.apiKey });
    expect(otherFilters.status).toBe(400);
    expect(otherFilters.body.error.code).toBe('invalid_cursor');
    const sameFilters = await app.request('GET', `/decisions?limit=1&cursor=${first.body.meta.nextCursor}`, { key: ws.apiKey });
    expect(sameFilters.status).toBe(200);
    const theirs = await app.request('GET', `/decisions?workspace_id=${other.workspaceId}`, { key: ws.apiKey });
    expect(theirs.status).toBe(403);
  });
});

describe('POST /decisions/{id}/attention', () => {
  it('creates the record, then refreshes it keeping attention_id and requested_at', async () => {
    const d = (await raise({ title: 'Look', urgency: 'standard' })).body.decision;
    const first = await attention(d.id, {
      recommended_option_id: 'approve',
      recommendation_note: 'safe',
      impact_if_delayed: 'launch slips',
      continuation: { strategy: 'resume_session' },
    });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      decision_id: d.id,
      status: 'pending',
      request_count: 1,
      blocking: { run_id: null, initiative_id: null, workstream_id: null },
      poll_url: `/api/v1/decisions/${d.id}`,
      resolve_url: `http://localhost:3000/decisions/${d.id}`,
      poll_after_ms: 60_000,
    });
    expect(first.body.meta).toEqual({ apiVersion: '1', workspaceId: app.ws.workspaceId, duplicate: false });

    const again = await attention(d.id, { impact_if_delayed: 'launch slips a week' });
    expect(again.body.data.attention_id).toBe(first.body.data.attention_id);
    expect(again.body.data.requested_at).toBe(first.body.data.requested_at);
    expect(again.body.data.request_count).toBe(2);
    expect(again.body.meta.duplicate).toBe(true);

    const polled = (await app.request('GET', `/decisions/${d.id}`)).body.decision;
    expect(polled.attention).toMatchObject({
      attention_id: first.body.data.attention_id,
      request_count: 2,
      recommended_option_id: 'approve',
      recommendation_note: 'safe',
      impact_if_delayed: 'launch slips a week',
      continuation: { strategy: 'resume_session' },
    });
    expect(polled.history.map((h: { event_type: string }) => h.event_type)).toEqual([
      'decision.created',
      'decision.attention_requested',
      'decision.attention_requested',
    ]);
  });

  it('an empty body refreshes with no recommendation', async () => {
    const d = (await raise({ title: 'Empty' })).body.decision;
    const res = await app.request('POST', `/decisions/${d.id}/attention`, { rawBody: '' });
    expect(res.status).toBe(200);
    expect((await app.request('GET', `/decisions/${d.id}`)).body.decision.attention.recommended_option_id).toBeNull();
  });

  it('tells the poller how long to wait, by urgency', async () => {
    const expected = { critical: 5000, urgent: 15000, standard: 60000, deferred: 300000 };
    for (const [urgency, ms] of Object.entries(expected)) {
      const d = (await raise({ title: urgency, urgency })).body.decision;
      expect((await attention(d.id)).body.data.poll_after_ms).toBe(ms);
    }
  });

  it('names what the decision blocks', async () => {
    const task = await newTask();
    const d = (await raise({ title: 'Blocked', blocks_task: true, task_id: task.taskId })).body.decision;
    const res = await attention(d.id);
    expect(res.body.data.blocking).toEqual({ run_id: null, initiative_id: task.initiativeId, workstream_id: task.workstreamId });
  });

  const refusals: [string, Record<string, unknown>, string][] = [
    ['workspace_id', { workspace_id: randomUUID() }, 'unknown_field'],
    ['run_id', { run_id: randomUUID() }, 'unknown_field'],
    ['initiative_id', { initiative_id: randomUUID() }, 'unknown_field'],
    ['an option the decision does not have', { recommended_option_id: 'maybe' }, 'validation_failed'],
    ['a recommended_option_id of 121 characters', { recommended_option_id: 'x'.repeat(121) }, 'validation_failed'],
    ['a note of 2001 characters', { recommendation_note: 'x'.repeat(2001) }, 'validation_failed'],
    ['an impact of 501 characters', { impact_if_delayed: 'x'.repeat(501) }, 'validation_failed'],
    ['an unknown strategy', { continuation: { strategy: 'retry_forever' } }, 'validation_failed'],
    ['an unknown continuation field', { continuation: { strategy: 'manual', when: 'now' } }, 'unknown_field'],
  ];
  for (const [name, body, code] of refusals) {
    it(`refuses ${name} (400 ${code}), writing nothing`, async () => {
      const d = (await raise({ title: 'Strict' })).body.decision;
      await app.expectUnchanged(async () => {
        const res = await attention(d.id, body);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe(code);
      });
    });
  }

  it('refuses a body id that would contradict the path (400 unknown_field)', async () => {
    const a = (await raise({ title: 'A' })).body.decision;
    const b = (await raise({ title: 'B' })).body.decision;
    await app.expectUnchanged(async () => {
      const res = await attention(a.id, { id: b.id });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'unknown_field', details: { fields: ['id'] } });
    });
  });

  it('is 404 for another workspace’s decision', async () => {
    const d = (await raise({ title: 'Mine' })).body.decision;
    expect((await attention(d.id, {}, other.apiKey)).status).toBe(404);
  });

  it('accepts and validates Idempotency-Key for forward compatibility only', async () => {
    const d = (await raise({ title: 'Key' })).body.decision;
    const bad = await app.request('POST', `/decisions/${d.id}/attention`, { body: {}, headers: { 'idempotency-key': '-bad' } });
    expect(bad.body.error.code).toBe('invalid_idempotency_key');
    const a = await app.request('POST', `/decisions/${d.id}/attention`, { body: {}, headers: { 'idempotency-key': 'same' } });
    const b = await app.request('POST', `/decisions/${d.id}/attention`, { body: {}, headers: { 'idempotency-key': 'same' } });
    expect([a.body.data.request_count, b.body.data.request_count]).toEqual([1, 2]);
  });
});
