/**
 * Artifacts (docs/contract.md §4.17): registering what agents deliver with its digest,
 * reading it back, and its stored bytes served so that no registered content runs as a page of
 * the app. Over HTTP through the served API, on both engines.
 */
import { createHash, randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { artifactContents, ledgerEvents, runs } from '@/db/schema';
import { loadFromTables } from '@/server/projections/state';
import { replayWorkspace } from '@/server/projections/rebuild';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { attemptLimitsOf } from '@/server/auth/sign-in';
import { runRetention } from '@/server/retention';
import { startTestApp, type ApiResponse, type TestApp, type TestWorkspace } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

type Ws = TestWorkspace & { post: (path: string, body: unknown, headers?: Record<string, string>) => Promise<ApiResponse> };

async function workspace(): Promise<Ws> {
  const ws = await app.createWorkspace(`artifacts-${randomUUID().slice(0, 8)}`);
  return { ...ws, post: (path, body, headers) => app.request('POST', path, { key: ws.apiKey, body, headers }) };
}

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const b64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');
/** RFC 8785 digest, computed as a tool server would, with none of the service's code. */
const digestOf = (value: unknown) => `sha256:${sha256(canonicalize(value)!)}`;

async function newTask(ws: Ws): Promise<string> {
  const res = await ws.post('/work', { title: `task ${randomUUID().slice(0, 6)}` });
  expect(res.status).toBe(201);
  return res.body.data.taskId as string;
}

/** The stored bytes as a client downloads them (the raw body, not text). */
async function download(ws: Ws, id: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}/api/v1/artifacts/${id}/content`, { headers: { authorization: `Bearer ${ws.apiKey}`, ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const REPORT = '# Findings\n\nThe pricing page converts.\n\n<script>document.title = "pwned"</script>\n';

describe('POST /artifacts', () => {
  it('stores small content by its digest, records the digest (never the bytes) in the ledger, and serves the exact bytes back', async () => {
    const ws = await workspace();
    const taskId = await newTask(ws);
    const res = await ws.post('/artifacts', {
      artifact_type: 'market_research_brief',
      title: 'Pricing research',
      task_id: taskId,
      media_type: 'Text/Markdown; charset=utf-8',
      content: b64(REPORT),
      metadata: { model: 'agent-7' },
    });
    expect(res.status).toBe(201);
    const artifact = res.body.data;
    expect(artifact).toMatchObject({
      artifact_type: 'market_research_brief',
      title: 'Pricing research',
      task_id: taskId,
      run_id: null,
      media_type: 'text/markdown; charset=utf-8',
      digest: `sha256:${sha256(REPORT)}`,
      size_bytes: Buffer.byteLength(REPORT),
      storage: 'stored',
      uri: null,
      content_url: `/api/v1/artifacts/${artifact.id}/content`,
      metadata: { model: 'agent-7' },
      created_by: { type: 'api_key' },
    });

    const [event] = await app.runtime.db
      .select()
      .from(ledgerEvents)
      .where(and(eq(ledgerEvents.aggregateId, artifact.id), eq(ledgerEvents.workspaceId, ws.workspaceId)));
    expect(event!.eventType).toBe('artifact.registered');
    const payload = JSON.parse(event!.payloadText!) as Record<string, unknown>;
    expect(payload).toMatchObject({
      digest: artifact.digest,
      size_bytes: artifact.size_bytes,
      task_id: taskId,
      media_type: artifact.media_type,
    });
    expect(event!.payloadText!).not.toContain('Findings');
    expect(event!.payloadText!).not.toContain(b64(REPORT));

    const got = await app.request('GET', `/artifacts/${artifact.id}`, { key: ws.apiKey });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(artifact);

    const file = await download(ws, artifact.id);
    expect(file.status).toBe(200);
    expect(sha256(file.bytes)).toBe(sha256(REPORT));
    expect(`sha256:${sha256(file.bytes)}`).toBe(artifact.digest);
    expect(file.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(file.headers.get('etag')).toBe(`"${artifact.digest}"`);
    expect(file.headers.get('content-disposition')).toMatch(/^inline; /);
    expect(file.headers.get('content-security-policy')).toContain('sandbox');
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    const again = await download(ws, artifact.id, { 'if-none-match': `"${artifact.digest}"` });
    expect(again.status).toBe(304);
    expect(again.bytes.length).toBe(0);

    // The tables are the ledger's replay.
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
    expect(replayed.state.artifacts.get(artifact.id)?.sha256).toBe(sha256(REPORT));
  });

  it('stores the same bytes once however often they are registered', async () => {
    const ws = await workspace();
    const body = { artifact_type: 'test_report', title: 'Tests', media_type: 'text/plain', content: b64(`same bytes ${randomUUID()}`) };
    const first = await ws.post('/artifacts', body);
    const second = await ws.post('/artifacts', { ...body, title: 'Tests, again' });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.data.id).not.toBe(first.body.data.id);
    expect(second.body.data.digest).toBe(first.body.data.digest);
    const stored = await app.runtime.db
      .select({ sha256: artifactContents.sha256 })
      .from(artifactContents)
      .where(eq(artifactContents.workspaceId, ws.workspaceId));
    expect(stored).toEqual([{ sha256: first.body.data.digest.slice(7) }]);
  });

  it('registers a large artifact by uri with the digest and size the agent claims, and never fetches it', async () => {
    const ws = await workspace();
    const digest = sha256(`a 5 MiB dataset ${randomUUID()}`);
    const res = await ws.post('/artifacts', {
      artifact_type: 'competitive_analysis',
      title: 'Dataset',
      media_type: 'application/vnd.apache.parquet',
      // An address that does not answer: registering must not need it to.
      uri: 'https://127.0.0.1:9/exports/dataset.parquet',
      sha256: `sha256:${digest.toUpperCase()}`,
      size_bytes: 5 * 1024 * 1024,
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      storage: 'external',
      digest: `sha256:${digest}`,
      size_bytes: 5 * 1024 * 1024,
      content_url: null,
    });
    expect(res.body.data.uri).toBe('https://127.0.0.1:9/exports/dataset.parquet');
    const file = await download(ws, res.body.data.id);
    expect(file.status).toBe(404);
    expect(JSON.parse(file.bytes.toString()).error.message).toContain('not stored here');
    const stored = await app.runtime.db.select().from(artifactContents).where(eq(artifactContents.workspaceId, ws.workspaceId));
    expect(stored).toEqual([]);
  });

  it('serves HTML, SVG and XML content as an attachment, sandboxed', async () => {
    const ws = await workspace();
    for (const [mediaType, content] of [
      ['text/html', '<h1>hi</h1><script>alert(1)</script>'],
      ['image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'],
      ['application/xml', '<?xml version="1.0"?><a/>'],
    ] as const) {
      const res = await ws.post('/artifacts', {
        artifact_type: 'blog_post',
        title: `page ${mediaType}`,
        media_type: mediaType,
        content: b64(content),
      });
      expect(res.status).toBe(201);
      const file = await download(ws, res.body.data.id);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-disposition')).toMatch(/^attachment; /);
      expect(file.headers.get('content-security-policy')).toContain('sandbox');
      expect(file.bytes.toString()).toBe(content);
    }
  });

  it('links a run and through it its task; replays with its Idempotency-Key', async () => {
    const ws = await workspace();
    const taskId = await newTask(ws);
    const run = await ws.post('/runs', { task_id: taskId, agent_id: 'agent-a' });
    expect(run.status).toBe(201);
    const body = {
      artifact_type: 'code_change',
      title: 'Patch',
      run_id: run.body.data.runId,
      media_type: 'text/x-diff',
      content: b64('--- a\n+++ b\n'),
    };
    const key = `artifact-${randomUUID()}`;
    const first = await ws.post('/artifacts', body, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ run_id: run.body.data.runId, task_id: taskId });
    const before = await app.counts();
    const replay = await ws.post('/artifacts', body, { 'Idempotency-Key': key });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body);
    expect(await app.counts()).toEqual(before);
  });

  it('refuses a run whose lease lapsed with 409 lease_expired, and writes nothing', async () => {
    const ws = await workspace();
    const taskId = await newTask(ws);
    const run = await ws.post('/runs', { task_id: taskId, agent_id: 'agent-a', lease_seconds: 5 });
    await app.runtime.db
      .update(runs)
      .set({ leaseExpiresAt: new Date(Date.now() - 1000) })
      .where(eq(runs.id, run.body.data.runId));
    await app.expectUnchanged(async () => {
      const res = await ws.post('/artifacts', {
        artifact_type: 'code_change',
        title: 'Late',
        run_id: run.body.data.runId,
        media_type: 'text/plain',
        content: b64('late'),
      });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('lease_expired');
    });
  });

  it('gives hostile input the contract’s error and writes nothing', async () => {
    const ws = await workspace();
    const other = await workspace();
    const othersTask = await newTask(other);
    const ownTask = await newTask(ws);
    const othersRun = (await other.post('/runs', { task_id: othersTask })).body.data.runId as string;
    const ok = { artifact_type: 'test_report', title: 'Report', media_type: 'text/plain', content: b64('ok') };
    const cases: [string, Record<string, unknown>, number, string, RegExp?][] = [
      ['an unknown type', { ...ok, artifact_type: 'malware' }, 400, 'validation_failed', /market_research_brief, .*agent_heartbeat/],
      ['bad base64', { ...ok, content: 'not base64!' }, 400, 'validation_failed', /content/],
      ['base64 that decodes loosely', { ...ok, content: 'aGVsbG8' }, 400, 'validation_failed', /content/],
      ['a digest that does not match', { ...ok, sha256: sha256('other') }, 400, 'validation_failed', /sha256: does not match/],
      ['a size that does not match', { ...ok, size_bytes: 3 }, 400, 'validation_failed', /size_bytes/],
      ['content over 1 MiB', { ...ok, content: b64(Buffer.alloc(1024 * 1024 + 1, 7)) }, 413, 'payload_too_large'],
      [
        'a javascript: uri',
        { ...ok, content: undefined, uri: 'javascript:alert(1)', sha256: sha256('x'), size_bytes: 1 },
        400,
        'validation_failed',
        /scheme/,
      ],
      [
        'a file: uri',
        { ...ok, content: undefined, uri: 'file:///etc/passwd', sha256: sha256('x'), size_bytes: 1 },
        400,
        'validation_failed',
        /scheme/,
      ],
      [
        'a uri with credentials',
        { ...ok, content: undefined, uri: 'https://u:p@example.com/x', sha256: sha256('x'), size_bytes: 1 },
        400,
        'validation_failed',
        /credentials/,
      ],
      [
        'a uri without its digest',
        { ...ok, content: undefined, uri: 'https://example.com/x', size_bytes: 1 },
        400,
        'validation_failed',
        /sha256/,
      ],
      ['content and a uri', { ...ok, uri: 'https://example.com/x' }, 400, 'validation_failed', /not both/],
      ['neither content nor uri', { ...ok, content: undefined }, 400, 'validation_failed', /content/],
      ['a bad media type', { ...ok, media_type: 'text' }, 400, 'validation_failed', /media_type/],
      ['another workspace’s task', { ...ok, task_id: othersTask }, 404, 'not_found'],
      ['another workspace’s run', { ...ok, run_id: othersRun }, 404, 'not_found'],
      [
        'a run of another task',
        { ...ok, task_id: ownTask, run_id: (await ws.post('/runs', { task_id: await newTask(ws) })).body.data.runId },
        400,
        'validation_failed',
        /another task/,
      ],
      ['an unknown member', { ...ok, extra: 1 }, 400, 'unknown_field'],
    ];
    for (const [what, body, status, code, message] of cases) {
      await app.expectUnchanged(async () => {
        const res = await ws.post('/artifacts', body, { 'Idempotency-Key': `hostile-${randomUUID()}` });
        expect([what, res.status, res.body.error.code]).toEqual([what, status, code]);
        if (message) expect(res.body.error.message, what).toMatch(message);
      });
    }
  });

  it('refuses a body over its limit with 413 while reading it', async () => {
    const ws = await workspace();
    await app.expectUnchanged(async () => {
      const res = await app.request('POST', '/artifacts', {
        key: ws.apiKey,
        rawBody: JSON.stringify({
          artifact_type: 'test_report',
          title: 'x',
          media_type: 'text/plain',
          content: 'A'.repeat(2 * 1024 * 1024),
        }),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('payload_too_large');
    });
  });
});

describe('GET /artifacts', () => {
  it('lists newest first with the task, run, type and deliverable filters, paged by cursor; another workspace’s are 404', async () => {
    const ws = await workspace();
    const taskId = await newTask(ws);
    const run = (await ws.post('/runs', { task_id: taskId })).body.data.runId as string;
    const reg = async (body: Record<string, unknown>) => {
      const res = await ws.post('/artifacts', { title: 't', media_type: 'text/plain', content: b64(randomUUID()), ...body });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };
    const a = await reg({ artifact_type: 'test_report', task_id: taskId });
    const b = await reg({ artifact_type: 'run_health_report', run_id: run });
    const c = await reg({ artifact_type: 'release_notes' });
    const list = async (q: string) => {
      const res = await app.request('GET', `/artifacts${q}`, { key: ws.apiKey });
      expect(res.status).toBe(200);
      return res.body;
    };
    expect((await list('')).data.map((x: { id: string }) => x.id)).toEqual([c, b, a]);
    expect((await list(`?task_id=${taskId}`)).data.map((x: { id: string }) => x.id)).toEqual([b, a]);
    expect((await list(`?run_id=${run}`)).data.map((x: { id: string }) => x.id)).toEqual([b]);
    expect((await list('?artifact_type=release_notes')).data.map((x: { id: string }) => x.id)).toEqual([c]);
    expect((await list('?deliverable=true')).data.map((x: { id: string }) => x.id)).toEqual([c, a]);
    expect((await list('?deliverable=false')).data.map((x: { id: string }) => x.id)).toEqual([b]);
    const first = await list('?limit=2');
    expect(first.meta.hasMore).toBe(true);
    const next = await list(`?limit=2&cursor=${encodeURIComponent(first.meta.nextCursor)}`);
    expect(next.data.map((x: { id: string }) => x.id)).toEqual([a]);

    const other = await workspace();
    expect((await app.request('GET', `/artifacts/${a}`, { key: other.apiKey })).status).toBe(404);
    expect((await download(other, a)).status).toBe(404);
    expect((await app.request('GET', '/artifacts', { key: other.apiKey })).body.data).toEqual([]);
  });

  it('serves stored bytes to a signed-in member of the workspace', async () => {
    const viewer = await app.member('viewer');
    const res = await app.request('POST', '/artifacts', {
      body: { artifact_type: 'sales_one_pager', title: 'One pager', media_type: 'text/plain', content: b64('for members') },
    });
    expect(res.status).toBe(201);
    const file = await fetch(`${app.url}/api/v1/artifacts/${res.body.data.id}/content`, {
      headers: { cookie: `next-auth.session-token=${viewer.session}` },
    });
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('for members');
    const [{ n }] = (await query<{ n: number }>(
      app.runtime.db,
      sql`select count(*)::int as n from artifacts where id = ${res.body.data.id}`,
    )) as [{ n: number }];
    expect(n).toBe(1);
  });
});

describe('artifacts in runs and receipts', () => {
  async function workWithRun(ws: Ws) {
    const work = await ws.post('/work', { title: `build ${randomUUID().slice(0, 6)}` });
    expect(work.status).toBe(201);
    const run = await ws.post('/runs', { task_id: work.body.data.taskId, agent_id: 'builder' });
    expect(run.status).toBe(201);
    return { taskId: work.body.data.taskId as string, receiptId: work.body.data.receiptId as string, runId: run.body.data.runId as string };
  }
  const register = async (ws: Ws, body: Record<string, unknown>) => {
    const res = await ws.post('/artifacts', { title: 'out', media_type: 'text/plain', content: b64(randomUUID()), ...body });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; digest: string };
  };
  const receiptOf = async (ws: Ws, receiptId: string) => {
    const res = await app.request('GET', `/receipts/${receiptId}`, { key: ws.apiKey });
    expect(res.status).toBe(200);
    const checked = await app.request('POST', '/agent-work-receipts/validate', { key: null, body: res.body });
    expect(checked.body, 'the exported receipt validates').toMatchObject({ valid: true });
    return res.body;
  };

  it('a finish names what the run delivered; the run shows it and the receipt lists every artifact of the task with its registering event', async () => {
    const ws = await workspace();
    const { taskId, receiptId, runId } = await workWithRun(ws);
    const linked = await register(ws, { artifact_type: 'technical_design', task_id: taskId });
    const loose = await register(ws, { artifact_type: 'code_change' });
    const finished = await ws.post(`/runs/${runId}/finish`, { outcome: 'completed', artifact_ids: [loose.id, loose.id] });
    expect(finished.status).toBe(200);
    expect(finished.body.data.artifact_ids).toEqual([loose.id]);
    expect((await app.request('GET', `/runs/${runId}`, { key: ws.apiKey })).body.data.artifact_ids).toEqual([loose.id]);

    const receipt = await receiptOf(ws, receiptId);
    expect(receipt.artifacts.map((a: { artifact_id: string }) => a.artifact_id)).toEqual([linked.id, loose.id]);
    const [first] = receipt.artifacts;
    expect(first).toMatchObject({ artifact_type: 'technical_design', digest: linked.digest, storage: 'stored', uri: null });
    const [event] = await app.runtime.db.select().from(ledgerEvents).where(eq(ledgerEvents.aggregateId, linked.id));
    expect(first.registered).toEqual({
      event_id: event!.id,
      sequence: event!.sequence,
      event_hash: event!.eventHash,
      payload_digest: event!.payloadDigest,
    });
    // A code change was delivered: a build task's deliverable.
    expect(receipt.warnings).toBeUndefined();

    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('warns (missing_deliverables), and does not refuse, when a done task delivered none of its type’s deliverables', async () => {
    const ws = await workspace();
    const { receiptId, runId, taskId } = await workWithRun(ws);
    await register(ws, { artifact_type: 'run_health_report', task_id: taskId });
    const open = await receiptOf(ws, receiptId);
    expect(open.warnings).toBeUndefined();
    expect((await ws.post(`/runs/${runId}/finish`, { outcome: 'completed' })).status).toBe(200);
    const done = await receiptOf(ws, receiptId);
    expect(done.task.status).toBe('done');
    expect(done.warnings).toEqual([
      { code: 'missing_deliverables', message: expect.stringContaining('code_change'), expected_artifact_types: ['code_change'] },
    ]);
  });

  it('refuses to name another workspace’s artifact (404) or another task’s (400) at finish, and writes nothing', async () => {
    const ws = await workspace();
    const other = await workspace();
    const { runId } = await workWithRun(ws);
    const theirs = await register(other, { artifact_type: 'code_change' });
    const elsewhere = await workWithRun(ws);
    const anotherTasks = await register(ws, { artifact_type: 'code_change', task_id: elsewhere.taskId });
    for (const [ids, status, code] of [
      [[theirs.id], 404, 'not_found'],
      [[randomUUID()], 404, 'not_found'],
      [[anotherTasks.id], 400, 'validation_failed'],
    ] as const) {
      await app.expectUnchanged(async () => {
        const res = await ws.post(`/runs/${runId}/finish`, { outcome: 'completed', artifact_ids: ids });
        expect([res.status, res.body.error.code]).toEqual([status, code]);
      });
    }
    const [row] = await app.runtime.db.select().from(runs).where(eq(runs.id, runId));
    expect([row!.status, row!.artifactIds]).toEqual(['running', []]);
  });
});

describe('artifacts in decisions', () => {
  it('a decision shows the artifacts it names, and with an action their digests join it before it is digested', async () => {
    const ws = await workspace();
    const reg = async (title: string) => {
      const res = await ws.post('/artifacts', {
        artifact_type: 'blog_post',
        title,
        media_type: 'text/markdown',
        content: b64(`# ${title}`),
      });
      expect(res.status).toBe(201);
      return res.body.data as { id: string; digest: string };
    };
    const [a, b] = [await reg('Draft'), await reg('Images')];
    const action = { tool: 'publish_page', arguments: { path: '/pricing' } };
    const raised = await ws.post('/decisions', {
      workspace_id: ws.workspaceId,
      title: 'Publish?',
      action,
      artifact_ids: [b.id, a.id, b.id],
    });
    expect(raised.status).toBe(201);
    const decision = raised.body.decision;
    const bound = { ...action, artifacts: [b, a].map((x) => ({ id: x.id, sha256: x.digest })) };
    expect(decision.action).toEqual(bound);
    expect(decision.action_digest).toBe(digestOf(bound));
    expect(decision.artifacts.map((x: { id: string; digest: string }) => [x.id, x.digest])).toEqual([
      [b.id, b.digest],
      [a.id, a.digest],
    ]);
    const read = await app.request('GET', `/decisions/${decision.id}`, { key: ws.apiKey });
    expect(read.body.decision.artifacts).toEqual(decision.artifacts);
    expect(read.body.decision.action).toEqual(bound);

    // Without an action the decision shows them and digests nothing.
    const plain = await ws.post('/decisions', { workspace_id: ws.workspaceId, title: 'Looks right?', artifact_ids: [a.id] });
    expect(plain.status).toBe(201);
    expect(plain.body.decision.action).toBeNull();
    expect(plain.body.decision.artifacts.map((x: { id: string }) => x.id)).toEqual([a.id]);

    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('refuses another workspace’s artifact with 404 and writes nothing', async () => {
    const ws = await workspace();
    const other = await workspace();
    const theirs = await other.post('/artifacts', { artifact_type: 'blog_post', title: 't', media_type: 'text/plain', content: b64('x') });
    await app.expectUnchanged(async () => {
      const res = await ws.post('/decisions', { workspace_id: ws.workspaceId, title: 'Publish?', artifact_ids: [theirs.body.data.id] });
      expect([res.status, res.body.error.code]).toEqual([404, 'not_found']);
      expect(res.text).not.toContain(other.workspaceId);
    });
  });
});

describe('DELETE /artifacts/{id}/content', () => {
  it('removes the stored bytes of every artifact holding them, keeps their digests, and records it; again is a no-op', async () => {
    const ws = await workspace();
    const bytes = `secret-ish ${randomUUID()}`;
    const body = { artifact_type: 'test_report', media_type: 'text/plain', content: b64(bytes) };
    const first = (await ws.post('/artifacts', { ...body, title: 'one' })).body.data;
    const second = (await ws.post('/artifacts', { ...body, title: 'two' })).body.data;
    const kept = (await ws.post('/artifacts', { ...body, title: 'other bytes', content: b64('other') })).body.data;

    const removed = await app.request('DELETE', `/artifacts/${first.id}/content`, { key: ws.apiKey });
    expect(removed.status).toBe(200);
    expect(removed.body.data).toMatchObject({ id: first.id, digest: first.digest, content_url: null });
    expect(removed.body.data.content_removed_at).toEqual(expect.any(String));
    for (const id of [first.id, second.id]) {
      const file = await download(ws, id);
      expect(file.status).toBe(404);
      expect(JSON.parse(file.bytes.toString()).error.message).toContain('removed');
      const read = await app.request('GET', `/artifacts/${id}`, { key: ws.apiKey });
      expect(read.body.data).toMatchObject({ digest: first.digest, content_url: null });
    }
    expect((await download(ws, kept.id)).status).toBe(200);
    const stored = await app.runtime.db.select().from(artifactContents).where(eq(artifactContents.workspaceId, ws.workspaceId));
    expect(stored.map((r) => r.sha256)).toEqual([kept.digest.slice(7)]);
    const events = await app.runtime.db
      .select()
      .from(ledgerEvents)
      .where(and(eq(ledgerEvents.workspaceId, ws.workspaceId), eq(ledgerEvents.eventType, 'artifact.content_removed')));
    expect(events.map((e) => e.aggregateId).sort()).toEqual([first.id, second.id].sort());

    // Again: nothing more happens.
    await app.expectUnchanged(async () => {
      const again = await app.request('DELETE', `/artifacts/${second.id}/content`, { key: ws.apiKey });
      expect(again.status).toBe(200);
    });
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));
  });

  it('is for owners and API keys; an approver, an external artifact and another workspace’s are refused and nothing changes', async () => {
    const ws = await workspace();
    const other = await workspace();
    const stored = (
      await app.request('POST', '/artifacts', {
        body: { artifact_type: 'test_report', title: 't', media_type: 'text/plain', content: b64(randomUUID()) },
      })
    ).body.data;
    const external = (
      await ws.post('/artifacts', {
        artifact_type: 'test_report',
        title: 'x',
        media_type: 'text/plain',
        uri: 'https://example.com/x',
        sha256: sha256('x'),
        size_bytes: 1,
      })
    ).body.data;
    const approver = await app.member('approver');
    await app.expectUnchanged(async () => {
      const byApprover = await app.request('DELETE', `/artifacts/${stored.id}/content`, { session: approver.session });
      expect([byApprover.status, byApprover.body.error.code]).toEqual([403, 'forbidden']);
      const ext = await app.request('DELETE', `/artifacts/${external.id}/content`, { key: ws.apiKey });
      expect([ext.status, ext.body.error.code]).toEqual([404, 'not_found']);
      const foreign = await app.request('DELETE', `/artifacts/${stored.id}/content`, { key: other.apiKey });
      expect([foreign.status, foreign.body.error.code]).toEqual([404, 'not_found']);
    });
    expect((await download({ ...app.ws, post: undefined as never }, stored.id)).status).toBe(200);
  });
});

describe('the workspace’s retention of stored bytes', () => {
  it('removes bytes last registered longer ago than the workspace keeps them, as system:retention, and keeps their digests', async () => {
    const ws = await workspace();
    const keeper = await workspace();
    const owner = await app.member('owner', ws.workspaceId);
    const trpc = createInternalTrpcHandler(async () => app.runtime);
    const setDays = async (days: number | null) => {
      const res = await trpc(
        new Request('http://127.0.0.1:3000/api/trpc/workspaces.changeSettings', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            origin: 'http://127.0.0.1:3000',
            cookie: `next-auth.session-token=${owner.session}`,
          },
          body: JSON.stringify({ workspace_id: ws.workspaceId, artifact_content_days: days }),
        }),
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { result: { data: { artifact_content_days: number | null; passkey_urgencies: string[] } } }).result
        .data;
    };
    expect(await setDays(2)).toEqual({ artifact_content_days: 2, passkey_urgencies: [] });
    const reg = async (w: Ws, text: string) =>
      (await w.post('/artifacts', { artifact_type: 'test_report', title: text, media_type: 'text/plain', content: b64(text) })).body
        .data as {
        id: string;
        digest: string;
      };
    const old = await reg(ws, `old ${randomUUID()}`);
    const fresh = await reg(ws, `fresh ${randomUUID()}`);
    const elsewhere = await reg(keeper, `kept for ever ${randomUUID()}`);
    await app.runtime.db.execute(
      sql`update artifact_contents set last_registered_at = now() - interval '3 days' where sha256 in (${old.digest.slice(7)}, ${elsewhere.digest.slice(7)})`,
    );

    const report = await runRetention(app.runtime.db, { deliveryLogDays: 7, attemptLimits: attemptLimitsOf(app.runtime) });
    expect(report?.artifact_contents).toBe(1);
    expect((await download(ws, old.id)).status).toBe(404);
    expect((await download(ws, fresh.id)).status).toBe(200);
    expect((await download(keeper, elsewhere.id)).status).toBe(200);
    const read = await app.request('GET', `/artifacts/${old.id}`, { key: ws.apiKey });
    expect(read.body.data).toMatchObject({ digest: old.digest, content_url: null, content_removed_at: expect.any(String) });
    const [event] = await app.runtime.db
      .select()
      .from(ledgerEvents)
      .where(and(eq(ledgerEvents.aggregateId, old.id), eq(ledgerEvents.eventType, 'artifact.content_removed')));
    expect(event).toMatchObject({ actorType: 'system', actorId: 'system:retention' });
    expect(JSON.parse(event!.payloadText!)).toMatchObject({ digest: old.digest, reason: 'retention' });
    const replayed = await replayWorkspace(app.runtime.db, ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, ws.workspaceId));

    // Back to keeping them for ever.
    expect(await setDays(null)).toEqual({ artifact_content_days: null, passkey_urgencies: [] });
  });
});
