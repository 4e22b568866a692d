/**
 * One named test per item of the OWASP API Security Top 10 (2023), each showing the rule that
 * stands against it on the real REST transport (and, where the web interface has its own door,
 * on the internal tRPC endpoint too). Operations are taken from the served OpenAPI document, so a
 * route added later without the same protection fails here. Agent-supplied text in the browser
 * (API10's UI half) is e2e/decisions.spec.ts, which runs in real Chromium.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { apiKeys } from '@/db/schema';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { openApiDocument } from '@/server/api/openapi';
import { appRouter } from '@/server/api/root';
import { factsOf, proceduresOf } from '@/server/api/trpc-internals';
import { sampleReceipt } from '@/server/domain/receipts/sample';
import { COSIGNATURE_ED25519, generateNoteKey, vkeyOf } from '@/server/ledger/note';
import { startTestApp, type ApiResponse, type TestApp, type TestMember, type TestWorkspace } from '../support/app';
import { startDbProxy } from '../support/db-proxy';
import { testEngine } from '../support/engine';
import { launchTree } from '../support/fixtures';
import { startUpstream, type Upstream } from '../support/upstream-mcp';

type Operation = { method: string; path: string; op: any };
const doc = JSON.parse(JSON.stringify(openApiDocument('http://127.0.0.1:3000'))) as { paths: Record<string, Record<string, any>> };
const operations: Operation[] = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
);
/** Operations that take a credential (public ones list no security, or an empty alternative). */
const authenticated = operations.filter(
  (o) => o.op.security?.length > 0 && !o.op.security.some((s: object) => Object.keys(s).length === 0),
);

const LEASES_PER_KEY = 2;
let app: TestApp;
let trpc: (req: Request) => Promise<Response>;
let approver: TestMember;
let viewer: TestMember;
let owner: TestMember;
/** Another workspace, and what it owns. */
let other: TestWorkspace;
let theirs: {
  decision: string;
  initiative: string;
  workstream: string;
  milestone: string;
  task: string;
  run: string;
  receipt: string;
  cursor: string;
  webhook: string;
  artifact: string;
  witness: string;
  mcpServer: string;
};
/** An upstream MCP server the other workspace fronts. */
let upstream: Upstream;
/** A webhook endpoint of the app's own workspace. */
let myWebhook: string;

beforeAll(async () => {
  app = await startTestApp({ SSE_LEASES_PER_KEY: String(LEASES_PER_KEY), MCP_UPSTREAM_ALLOW_HOSTS: '127.0.0.1' });
  upstream = await startUpstream({ echo: {} });
  trpc = createInternalTrpcHandler(async () => app.runtime);
  [approver, viewer, owner] = await Promise.all([app.member('approver'), app.member('viewer'), app.member('owner')]);
  other = await app.createWorkspace();
  const key = other.apiKey;
  const tree = await app.request('POST', '/initiatives', { key, body: { workspace_id: other.workspaceId, ...launchTree } });
  expect(tree.status).toBe(201);
  const { refs } = tree.body.data;
  const run = await app.request('POST', '/runs', { key, body: { task_id: refs.recruit } });
  expect(run.status).toBe(201);
  const decision = await app.request('POST', '/decisions', {
    key,
    body: { workspace_id: other.workspaceId, title: 'Theirs', task_id: refs.recruit },
  });
  expect(decision.status).toBe(201);
  const receipt = sampleReceipt();
  const imported = await app.request('POST', '/agent-work-receipts/import', { key, body: receipt });
  expect(imported.status).toBe(201);
  const page = await app.request('GET', '/events/stream?limit=1', { key });
  const hook = await app.request('POST', '/webhooks', { key, body: { url: 'https://93.184.216.34/theirs' } });
  expect(hook.status).toBe(201);
  const artifact = await app.request('POST', '/artifacts', {
    key,
    body: { artifact_type: 'test_report', title: 'Theirs', media_type: 'text/plain', content: Buffer.from('theirs').toString('base64') },
  });
  expect(artifact.status).toBe(201);
  const witness = await app.request('POST', '/ledger/witnesses', {
    key,
    body: { vkey: vkeyOf(generateNoteKey('witness.example/theirs', COSIGNATURE_ED25519)) },
  });
  expect(witness.status).toBe(201);
  const mcpServer = await app.request('POST', '/mcp-servers', { key, body: { name: 'theirs', url: upstream.url } });
  expect(mcpServer.status).toBe(201);
  const mine = await app.request('POST', '/webhooks', { body: { url: 'https://93.184.216.34/mine' } });
  expect(mine.status).toBe(201);
  myWebhook = mine.body.data.id;
  theirs = {
    webhook: hook.body.data.id,
    artifact: artifact.body.data.id,
    witness: witness.body.data.id,
    mcpServer: mcpServer.body.data.id,
    decision: decision.body.decision.id,
    initiative: tree.body.data.initiative.id,
    workstream: refs.research,
    milestone: refs['m-interviews'],
    task: refs.recruit,
    run: run.body.data.runId,
    receipt: receipt.receipt_id as string,
    cursor: page.body.meta.nextCursor,
  };
  expect(theirs.run).toMatch(/^[0-9a-f-]{36}$/);
});
afterAll(async () => {
  await app?.close();
  await upstream?.close();
});

/** The first answer of `attempt` that is not 429 (a lease's place is freed as its loop ends, a tick later). */
async function eventually(attempt: () => Promise<Response>): Promise<Response> {
  for (let i = 0; ; i++) {
    const res = await attempt();
    if (res.status !== 429 || i === 50) {
      expect(res.status).toBe(200);
      return res;
    }
    await res.text();
    await new Promise((r) => setTimeout(r, 10));
  }
}

const errorCode = (res: ApiResponse) => res.body?.error?.code as string | undefined;

/** Calls the internal tRPC endpoint the web interface uses, as a signed-in human from the app's origin. */
async function trpcMutation(path: string, input: unknown, who: { session?: string; key?: string }) {
  const headers = new Headers({ 'content-type': 'application/json', origin: 'http://127.0.0.1:3000' });
  if (who.session) headers.set('cookie', `next-auth.session-token=${who.session}`);
  if (who.key) headers.set('authorization', `Bearer ${who.key}`);
  const res = await trpc(new Request(`http://127.0.0.1:3000/api/trpc/${path}`, { method: 'POST', headers, body: JSON.stringify(input) }));
  return { status: res.status, body: (await res.json()) as any };
}

describe('OWASP API Security Top 10 (2023)', () => {
  it('API1:2023 Broken Object Level Authorization: another workspace’s ids are 404 on every route, like ids that do not exist, and nothing changes', async () => {
    const mine = app.ws.workspaceId;
    // [method, path, body, who]: every id-bearing input, each given the other workspace's object.
    const attempts: [string, string, Record<string, unknown> | undefined, { session?: string }?][] = [
      ['GET', `/decisions/${theirs.decision}`, undefined],
      ['POST', `/decisions/${theirs.decision}/attention`, {}],
      ['POST', `/decisions/${theirs.decision}/approve`, {}, approver],
      ['POST', `/decisions/${theirs.decision}/decline`, {}, approver],
      ['POST', `/decisions/${theirs.decision}/cancel`, {}, owner],
      ['GET', `/initiatives/${theirs.initiative}?include=tree`, undefined],
      ['GET', `/runs/${theirs.run}`, undefined],
      ['POST', `/runs/${theirs.run}/checkpoints`, { label: 'mine now' }],
      ['POST', `/runs/${theirs.run}/finish`, { outcome: 'completed' }],
      ['POST', `/runs/${theirs.run}/actions/pause`, {}],
      ['POST', `/runs/${theirs.run}/heartbeat`, {}],
      ['GET', `/receipts/${theirs.receipt}`, undefined],
      ['GET', `/tasks/${theirs.task}`, undefined],
      ['PATCH', `/tasks/${theirs.task}`, { title: 'mine now' }],
      ['POST', '/work', { title: 'x', initiative_id: theirs.initiative, workstream_id: theirs.workstream, milestone_id: theirs.milestone }],
      ['POST', '/decisions', { workspace_id: mine, title: 'x', task_id: theirs.task }],
      ['POST', '/decisions', { workspace_id: mine, title: 'x', run_id: theirs.run }],
      ['POST', '/runs', { task_id: theirs.task }],
      ['POST', '/tasks/claim', { agent_id: 'x', filters: { initiative_id: theirs.initiative } }],
      ['POST', '/tasks/claim', { agent_id: 'x', filters: { milestone_id: theirs.milestone } }],
      ['POST', '/lifecycle', { level: 'initiative', id: theirs.initiative, action: 'pause' }],
      ['POST', '/lifecycle', { level: 'task', id: theirs.task, action: 'cancel' }],
      ['GET', `/webhooks/${theirs.webhook}`, undefined],
      ['PATCH', `/webhooks/${theirs.webhook}`, { description: 'mine now' }],
      ['DELETE', `/webhooks/${theirs.webhook}`, {}],
      ['POST', `/webhooks/${theirs.webhook}/rotate-secret`, {}],
      ['POST', `/webhooks/${theirs.webhook}/test`, {}],
      ['GET', `/webhooks/${theirs.webhook}/deliveries`, undefined],
      ['GET', `/artifacts/${theirs.artifact}`, undefined],
      ['GET', `/artifacts/${theirs.artifact}/content`, undefined],
      ['DELETE', `/artifacts/${theirs.artifact}/content`, {}],
      ['DELETE', `/ledger/witnesses/${theirs.witness}`, {}],
      ['GET', `/mcp-servers/${theirs.mcpServer}`, undefined],
      ['PATCH', `/mcp-servers/${theirs.mcpServer}`, { default_mode: 'allow' }],
      ['POST', `/mcp-servers/${theirs.mcpServer}/refresh`, {}],
      ['DELETE', `/mcp-servers/${theirs.mcpServer}`, {}],
      ['POST', '/artifacts', { artifact_type: 'test_report', title: 'x', media_type: 'text/plain', content: 'eA==', task_id: theirs.task }],
      ['POST', '/artifacts', { artifact_type: 'test_report', title: 'x', media_type: 'text/plain', content: 'eA==', run_id: theirs.run }],
    ];
    // Every path that names an object is attempted (a new one must be added above), but a
    // workspace's public keys: they are public, any workspace's to anyone (grants.int.test.ts).
    const templated = new Set(
      operations
        .filter((o) => o.path.includes('{') && o.path !== '/workspaces/{workspace_id}/jwks.json')
        .map((o) => `${o.method} ${o.path}`),
    );
    const tried = new Set(
      attempts.map(([method, path]) => {
        const bare = path.split('?')[0]!;
        return `${method} ${[...templated].map((t) => t.split(' ')[1]!).find((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(bare)) ?? bare}`;
      }),
    );
    for (const op of templated) expect(tried, op).toContain(op);

    const ids = Object.values(theirs).filter((v) => /^[0-9a-f]{8}-/.test(v));
    await app.expectUnchanged(async () => {
      for (const [method, path, body, who] of attempts) {
        const res = await app.request(method, path, { body, session: who?.session });
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
        expect(errorCode(res)).toBe('not_found');
        // The answer is the one a missing id gets: it neither confirms nor names the object.
        for (const id of ids) expect(res.text).not.toContain(id);
        const missing = ids.reduce((p, id) => p.replaceAll(id, randomUUID()), path);
        const missingBody = body && JSON.parse(ids.reduce((b, id) => b.replaceAll(id, randomUUID()), JSON.stringify(body)));
        const control = await app.request(method, missing, { body: missingBody, session: who?.session });
        expect(control.status).toBe(404);
        expect(control.body.error.message).toBe(res.body.error.message);
      }
      // A filter naming their initiative finds nothing, as one naming no initiative at all does.
      const filtered = await app.request('GET', `/operating-map?initiative_id=${theirs.initiative}`);
      const unfiltered = await app.request('GET', `/operating-map?initiative_id=${randomUUID()}`);
      expect(filtered.status).toBe(200);
      expect(filtered.body.data).toEqual({ processes: [], totalProcesses: 0 });
      expect(unfiltered.body.data).toEqual(filtered.body.data);
      // So do the lists' filters naming their task or initiative.
      for (const path of [
        `/tasks?initiative_id=${theirs.initiative}`,
        `/runs?task_id=${theirs.task}`,
        `/receipts?task_id=${theirs.task}`,
      ]) {
        const res = await app.request('GET', path);
        expect(res.status, path).toBe(200);
        expect(res.body.data, path).toEqual([]);
      }
      // Naming the other workspace outright is 403 forbidden; its cursor is not ours to use.
      for (const [method, path, body] of [
        ['GET', `/decisions?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/operating-map?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/tasks?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/runs?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/receipts?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/initiatives?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/workspace?workspace_id=${other.workspaceId}`, undefined],
        ['GET', `/initiatives/${theirs.initiative}?workspace_id=${other.workspaceId}`, undefined],
        ['POST', '/decisions', { workspace_id: other.workspaceId, title: 'x' }],
        ['POST', '/initiatives', { workspace_id: other.workspaceId, title: 'x' }],
      ] as const) {
        const res = await app.request(method, path, { body });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(errorCode(res)).toBe('forbidden');
      }
      const foreignCursor = await app.request('GET', `/events/stream?cursor=${encodeURIComponent(theirs.cursor)}`);
      expect(errorCode(foreignCursor)).toBe('invalid_cursor');
    });
    // Dedup claims name an initiative and a run: another workspace's is 404 like any of its ids,
    // whether claiming or releasing, and their claim is neither blocked, taken nor released.
    const claim = { source: 'webhook', event_key: `evt-${randomUUID()}`, initiative_id: theirs.initiative };
    const held = await app.request('POST', '/live/dedup/claim', { key: other.apiKey, body: { ...claim, run_id: theirs.run } });
    expect(held.body).toMatchObject({ claimed: true, active_run_id: theirs.run });
    await app.expectUnchanged(async () => {
      for (const path of ['/live/dedup/claim', '/live/dedup/release']) {
        const bodies = [
          { ...claim, run_id: theirs.run },
          { source: 'webhook', event_key: 'x', run_id: theirs.run },
        ];
        // A release names its run; a claim may name only the initiative.
        for (const body of path.endsWith('claim') ? [...bodies, claim] : bodies) {
          const res = await app.request('POST', path, { body });
          expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(404);
          expect(errorCode(res)).toBe('not_found');
        }
      }
    });
    const stillTheirs = await app.request('POST', '/live/dedup/claim', { key: other.apiKey, body: claim });
    expect(stillTheirs.body).toMatchObject({ deduped: true, claimed: false, active_run_id: theirs.run });
    // And their objects are as they were.
    const still = await app.request('GET', `/decisions/${theirs.decision}`, { key: other.apiKey });
    expect(still.body.decision).toMatchObject({ status: 'pending', attention: null });
    expect((await app.request('GET', `/runs/${theirs.run}`, { key: other.apiKey })).body.data.status).toBe('running');
  });

  it('API2:2023 Broken Authentication: every operation that needs a key answers 401 to none, a malformed, an unknown and a revoked one', async () => {
    const revoked = await app.createWorkspace();
    await app.runtime.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, revoked.apiKeyId));
    const credentials: [string, Record<string, string>][] = [
      ['none', {}],
      ['malformed', { authorization: 'Bearer not-a-key' }],
      ['another scheme', { authorization: `Basic ${Buffer.from(`x:${app.ws.apiKey}`).toString('base64')}` }],
      ['unknown', { authorization: `Bearer awk_${'A'.repeat(43)}` }],
      [
        'the right key with one character changed',
        { authorization: `Bearer ${app.ws.apiKey.slice(0, -1)}${app.ws.apiKey.endsWith('A') ? 'B' : 'A'}` },
      ],
      ['revoked', { authorization: `Bearer ${revoked.apiKey}` }],
    ];
    expect(authenticated.length).toBeGreaterThan(20);
    await app.expectUnchanged(async () => {
      for (const { method, path } of authenticated) {
        const concrete = path.replace(/\{[^}]+\}/g, (p) => (p === '{action}' ? 'pause' : randomUUID()));
        for (const [label, headers] of credentials) {
          const res = await app.request(method, concrete, { key: null, headers, body: method === 'POST' ? {} : undefined });
          expect(res.status, `${method} ${path} with ${label} credential`).toBe(401);
          expect(errorCode(res)).toBe('unauthorized');
          expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
        }
      }
    });
    // Only a hash is kept: nothing the database holds for a key can be presented as one.
    const [stored] = await query<Record<string, unknown>>(app.runtime.db, sql`select * from api_keys where id = ${app.ws.apiKeyId}`);
    expect(JSON.stringify(stored)).not.toContain(app.ws.apiKey.slice(12));
    expect(stored!.secret_hash).toBe(createHash('sha256').update(app.ws.apiKey).digest('hex'));
  });

  it('API3:2023 Broken Object Property Level Authorization: server-owned fields cannot be assigned, and no response carries a secret', async () => {
    const run = await app.request('POST', '/runs', {
      body: { task_id: (await app.request('POST', '/work', { body: { title: 't' } })).body.data.taskId },
    });
    const decision = (await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'd' } })).body.decision;
    const serverOwned = {
      id: randomUUID(),
      status: 'done',
      created_at: '2020-01-01T00:00:00.000Z',
      event_hash: 'a'.repeat(64),
      sequence: 1,
    };
    const writes: [string, Record<string, unknown>][] = [
      ['/work', { title: 'x', ...serverOwned, owner_id: randomUUID() }],
      ['/decisions', { workspace_id: app.ws.workspaceId, title: 'x', status: 'approved', resolution: { outcome: 'approved' } }],
      ['/initiatives', { workspace_id: app.ws.workspaceId, title: 'x', status: 'completed', owner_id: randomUUID() }],
      ['/runs', { task_id: run.body.data.task_id, status: 'completed' }],
      [`/runs/${run.body.data.runId}/checkpoints`, { label: 'x', id: randomUUID(), sequence: 1 }],
      [`/runs/${run.body.data.runId}/finish`, { outcome: 'completed', status: 'completed', finished_at: serverOwned.created_at }],
      [`/decisions/${decision.id}/attention`, { status: 'approved', resolved_by: randomUUID() }],
      ['/lifecycle', { level: 'task', id: randomUUID(), action: 'cancel', affected: { nodes: 0 } }],
      ['/live/dedup/claim', { source: 's', event_key: 'e', claimed: true, expires_at: serverOwned.created_at }],
    ];
    await app.expectUnchanged(async () => {
      for (const [path, body] of writes) {
        const res = await app.request('POST', path, { body });
        expect(res.status, `${path}: ${res.text}`).toBe(400);
        expect(errorCode(res)).toBe('unknown_field');
        expect(res.body.error.details.fields.length).toBeGreaterThan(0);
      }
      // A human cannot name who cancelled or ruled, or when.
      const cancel = await app.request('POST', `/decisions/${decision.id}/cancel`, {
        session: owner.session,
        body: { resolution: { outcome: 'approved' }, cancelled_by: approver.userId },
      });
      expect(errorCode(cancel)).toBe('unknown_field');
      const ruling = await app.request('POST', `/decisions/${decision.id}/approve`, {
        session: approver.session,
        body: { resolved_by: owner.userId, resolved_at: serverOwned.created_at },
      });
      expect(errorCode(ruling)).toBe('unknown_field');
    });
    // Reads never carry a secret or its hash.
    const reads = await Promise.all(
      [
        `/decisions/${decision.id}`,
        '/decisions',
        `/runs/${run.body.data.runId}`,
        '/events/stream?limit=100',
        '/operating-map',
        `/initiatives/${(await app.request('GET', '/operating-map')).body.data?.initiatives?.[0]?.id ?? randomUUID()}`,
      ].map((p) => app.request('GET', p)),
    );
    for (const res of reads) {
      expect(res.text).not.toMatch(/secret_hash|password|\$argon2|awk_[A-Za-z0-9_-]{43}/);
      expect(res.text).not.toContain(createHash('sha256').update(app.ws.apiKey).digest('hex'));
    }
  });

  it('API4:2023 Unrestricted Resource Consumption: the web interface’s /api/trpc caps bodies too, declared or streamed, before any procedure reads them', async () => {
    // The production server holds every body bound for Next to 1 MiB before Next sees it
    // (e2e/body-limits.spec.ts); the handler holds it itself wherever else it runs.
    const MiB = 1024 * 1024;
    const piece = new Uint8Array(64 * 1024).fill(0x78);
    await app.expectUnchanged(async () => {
      for (const declared of [true, false]) {
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= 64 * MiB) return controller.close();
            sent += piece.length;
            controller.enqueue(piece);
          },
        });
        const headers: Record<string, string> = { 'content-type': 'application/json', origin: 'http://127.0.0.1:3000' };
        if (declared) headers['content-length'] = String(64 * MiB);
        const res = await trpc(
          new Request('http://127.0.0.1:3000/api/trpc/account.joinWithInvitation', {
            method: 'POST',
            headers,
            body,
            duplex: 'half',
          } as RequestInit),
        );
        expect(res.status).toBe(413);
        expect(((await res.json()) as any).error.code).toBe('payload_too_large');
        expect(sent, declared ? 'declared' : 'streamed').toBeLessThan(2 * MiB);
      }
    });
  });

  it('API4:2023 Unrestricted Resource Consumption: every limit has a ceiling, bodies are capped, and a key holds a bounded number of event-stream leases', async () => {
    // Every `limit` the document offers has a documented maximum, and one past it is refused.
    const limited = operations.filter((o) => (o.op.parameters ?? []).some((p: any) => p.name === 'limit'));
    expect(limited.map((o) => o.path).sort()).toEqual([
      '/artifacts',
      '/decisions',
      '/events/stream',
      '/initiatives',
      '/mcp-servers',
      '/operating-map',
      '/receipts',
      '/runs',
      '/tasks',
      '/tool-calls',
      '/webhooks',
      '/webhooks/{id}/deliveries',
    ]);
    for (const { method, path: template, op } of limited) {
      const path = template.replace('{id}', myWebhook);
      const max = op.parameters.find((p: any) => p.name === 'limit').schema.maximum as number;
      expect(max, path).toBeGreaterThan(0);
      expect(max, path).toBeLessThanOrEqual(200);
      expect((await app.request(method, `${path}?limit=${max}`)).status, path).toBe(200);
      const over = await app.request(method, `${path}?limit=${max + 1}`);
      expect(over.status, path).toBe(400);
      expect(errorCode(over)).toBe('validation_failed');
    }
    // Bodies: the documented 413 on every operation that takes one.
    for (const { method, path, op } of operations.filter((o) => o.op.requestBody))
      expect(op.responses['413'], `${method} ${path}`).toBeDefined();

    // Event-stream leases: SSE_LEASES_PER_KEY (2 here) open at once per key; the next is 429 with
    // the seconds until the key's first lease ends; another key is unaffected; closing one frees a place.
    const open = (key: string, leaseMs: number, signal?: AbortSignal) =>
      app.fetch(
        new Request(`http://127.0.0.1:3000/api/v1/events/stream?format=sse&lease_ms=${leaseMs}`, {
          headers: { authorization: `Bearer ${key}` },
          signal,
        }),
      );
    const held = [await open(app.ws.apiKey, 20_000), await open(app.ws.apiKey, 60_000)];
    for (const res of held) expect(res.status).toBe(200);
    const refused = await open(app.ws.apiKey, 1000);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as any;
    expect(body.error.code).toBe('rate_limited');
    expect(body.error.details).toMatchObject({ limit: LEASES_PER_KEY, scope: 'event_stream_leases' });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(15);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(body.error.retryAfter).toBe(retryAfter);
    const elsewhere = await open(other.apiKey, 1);
    expect(elsewhere.status).toBe(200);
    await elsewhere.text();
    // The client leaving ends its lease and frees its place.
    await held[0]!.body!.cancel();
    const admitted = await eventually(() => open(app.ws.apiKey, 1));
    await admitted.text();
    await held[1]!.body!.cancel();
    const again = await eventually(() => open(app.ws.apiKey, 1));
    await again.text();
  });

  it('API5:2023 Broken Function Level Authorization: keys cannot rule, roles are enforced, and /api/trpc applies the same rules as REST', async () => {
    const raise = async () =>
      (await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'rule?' } })).body.decision.id as string;
    const byKey = await raise();
    for (const action of ['approve', 'decline']) {
      await app.expectUnchanged(async () => {
        const res = await app.request('POST', `/decisions/${byKey}/${action}`, { body: {} });
        expect(res.status).toBe(403);
        expect(errorCode(res)).toBe('human_session_required');
        const viaTrpc = await trpcMutation(`decisions.${action}`, { id: byKey }, { key: app.ws.apiKey });
        expect(viaTrpc.status).toBe(401);
      });
    }
    // The same person and action get the same answer through both doors.
    const cases: [string, TestMember, 'approve' | 'decline', number][] = [
      ['viewer', viewer, 'approve', 403],
      ['viewer', viewer, 'decline', 403],
      ['approver', approver, 'decline', 200],
      ['owner', owner, 'approve', 200],
    ];
    for (const [role, who, action, expected] of cases) {
      const viaRest = await raise();
      const viaTrpc = await raise();
      const rest = await app.request('POST', `/decisions/${viaRest}/${action}`, { session: who.session, body: {} });
      const internal = await trpcMutation(`decisions.${action}`, { id: viaTrpc }, { session: who.session });
      expect(rest.status, `${role} ${action} via REST`).toBe(expected);
      expect(internal.status, `${role} ${action} via tRPC`).toBe(expected);
      if (expected === 403) {
        expect(errorCode(rest)).toBe('forbidden');
        expect(internal.body.error.data.appCode).toBe('forbidden');
      }
      const after = await Promise.all(
        [viaRest, viaTrpc].map(async (id) => (await app.request('GET', `/decisions/${id}`)).body.decision.status),
      );
      expect(after, role).toEqual(expected === 200 ? [`${action}d`, `${action}d`] : ['pending', 'pending']);
    }
    // Key management is the owner's: an approver cannot mint keys through the interface's door.
    const mint = await trpcMutation('apiKeys.create', { workspace_id: app.ws.workspaceId, name: 'sneaky' }, { session: approver.session });
    expect(mint.status).toBe(403);
    expect(mint.body.error.data.appCode).toBe('forbidden');
    const [keys] = await query<{ n: string }>(app.runtime.db, sql`select count(*) as n from api_keys where name = 'sneaky'`);
    expect(Number(keys!.n)).toBe(0);
  });

  it('API6:2023 Unrestricted Access to Sensitive Business Flows: whoever raised a decision cannot rule on it, by either door', async () => {
    for (const action of ['approve', 'decline'] as const) {
      const raised = await app.request('POST', '/decisions', {
        session: approver.session,
        body: { workspace_id: app.ws.workspaceId, title: `self ${action}` },
      });
      expect(raised.status).toBe(201);
      const id = raised.body.decision.id as string;
      await app.expectUnchanged(async () => {
        const rest = await app.request('POST', `/decisions/${id}/${action}`, { session: approver.session, body: {} });
        expect(rest.status).toBe(403);
        expect(errorCode(rest)).toBe('forbidden');
        const internal = await trpcMutation(`decisions.${action}`, { id }, { session: approver.session });
        expect(internal.status).toBe(403);
      });
      // Someone else may.
      expect((await app.request('POST', `/decisions/${id}/${action}`, { session: owner.session, body: {} })).status).toBe(200);
    }
  });

  it('API7:2023 Server Side Request Forgery: the receipt validator and import never fetch a URL they are given', async () => {
    let connections = 0;
    const bait = http.createServer((_req, res) => res.end('{}'));
    bait.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => bait.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(bait.address() as AddressInfo).port}`;
    try {
      const receipt = {
        ...sampleReceipt(),
        $schema: `${url}/schema.json`,
        evidence: [
          { kind: 'file', uri: `${url}/evidence`, digest: `sha256:${'ab'.repeat(32)}` },
          { kind: 'url', uri: `${url}/$ref`, digest: `sha256:${'cd'.repeat(32)}`, $ref: `${url}/ref.json` },
        ],
      };
      for (const path of ['/agent-work-receipts/validate', '/agent-work-receipts/import']) {
        const res = await app.request('POST', path, { body: receipt });
        expect(res.status, res.text).toBeLessThan(500);
      }
      await app.request('GET', `/agent-work-receipts/validate?url=${encodeURIComponent(url)}`, { key: null });
      // Webhooks are the one place the service calls a URL it is given: inside targets are refused,
      // in deprecated IPv6 spellings too (IPv4-compatible ::/96, 6to4, NAT64).
      const port = (bait.address() as AddressInfo).port;
      await app.expectUnchanged(async () => {
        for (const target of [
          url,
          `http://[::127.0.0.1]:${port}/`,
          `http://[::7f00:1]:${port}/`,
          `http://[2002:7f00:1::]:${port}/`,
          `http://[64:ff9b::7f00:1]:${port}/`,
        ]) {
          const res = await app.request('POST', '/webhooks', { body: { url: target } });
          expect(res.status, target).toBe(400);
        }
      });
      await app.request('POST', '/runs', { body: { task_id: randomUUID(), agent_id: url } });
      // Give anything asynchronous time to reach out.
      await new Promise((r) => setTimeout(r, 300));
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((resolve) => bait.close(() => resolve()));
    }
  });

  it('API8:2023 Security Misconfiguration: security headers on every answer, no CORS grant, CSRF-safe session writes, errors without internals', async () => {
    const answers = [
      await app.request('GET', '/health', { key: null }),
      await app.request('GET', '/decisions'),
      await app.request('GET', '/decisions', { key: null }),
      await app.request('POST', '/work', { rawBody: '{"title":', headers: { 'content-type': 'application/json' } }),
      await app.request('GET', '/no-such-route'),
    ];
    for (const res of answers) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'; sandbox");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.text).not.toMatch(/\bat .+\.[jt]s:\d+|node_modules|SELECT |syntax error/i);
    }
    // Another site can make a visitor's browser read links (GET, <img>) and post forms: the reads
    // count nothing against the visitor's address, and a link cannot be spent from there.
    const visitor = { address: '10.77.0.1' };
    for (let i = 0; i < 12; i++) {
      const read = await trpc(
        new Request(
          `http://127.0.0.1:3000/api/trpc/account.invitation?input=${encodeURIComponent(JSON.stringify({ token: `awi_${'k'.repeat(42)}${i % 10}` }))}`,
          { headers: { 'x-forwarded-for': visitor.address, 'sec-fetch-site': 'cross-site' } },
        ),
      );
      expect(read.status).toBe(404);
    }
    const join = (origin: string) =>
      trpc(
        new Request('http://127.0.0.1:3000/api/trpc/account.joinWithInvitation', {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin, 'x-forwarded-for': visitor.address },
          body: JSON.stringify({ token: `awi_${'k'.repeat(43)}`, display_name: 'V', password: 'a long enough password' }),
        }),
      );
    expect((await join('https://evil.example')).status).toBe(403);
    expect((await join('http://127.0.0.1:3000')).status).toBe(404); // not 429: nothing above was counted
    // CSRF: a signed-in human's cookie rides along on cross-site requests, so a write with a session
    // must come from the app's own origin, by either door; nothing else is accepted.
    const decision = (await app.request('POST', '/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'csrf' } })).body.decision;
    await app.expectUnchanged(async () => {
      for (const origin of ['https://evil.example', 'null', 'http://127.0.0.1:3000.evil.example', null]) {
        const rest = await app.request('POST', `/decisions/${decision.id}/approve`, { session: approver.session, origin, body: {} });
        expect(rest.status, `REST from ${origin}`).toBe(403);
        const headers = new Headers({ 'content-type': 'application/json', cookie: `next-auth.session-token=${approver.session}` });
        if (origin !== null) headers.set('origin', origin);
        const internal = await trpc(
          new Request('http://127.0.0.1:3000/api/trpc/decisions.approve', {
            method: 'POST',
            headers,
            body: JSON.stringify({ id: decision.id }),
          }),
        );
        expect(internal.status, `tRPC from ${origin}`).toBe(403);
        await internal.text();
      }
    });
    // A cross-origin preflight gets no grant: browsers on other sites cannot call the API with a user's cookie.
    const preflight = await app.fetch(
      new Request('http://127.0.0.1:3000/api/v1/work', {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      }),
    );
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();
    await preflight.text();
  });

  it('API9:2023 Improper Inventory Management: the document lists every operation served, and nothing else is reachable under /api/v1', async () => {
    const served = await app.request('GET', '/openapi.json', { key: null });
    const listed = Object.entries(served.body.paths as Record<string, object>).flatMap(([p, item]) =>
      Object.keys(item).map((m) => `${m} ${p}`),
    );
    expect(listed.sort()).toEqual(operations.map((o) => `${o.method.toLowerCase()} ${o.path}`).sort());
    expect(served.body.info.version).toBe('1');
    expect(served.body.servers.map((s: { url: string }) => s.url)).toEqual(['/api/v1']);
    // Procedures the web interface calls are not published: their tRPC names are 404 here.
    const procedures = Object.entries(proceduresOf(appRouter)).map(([name, p]) => [name, factsOf(p)] as const);
    const internalOnly = procedures.filter(([, p]) => !p.meta?.openapi);
    expect(internalOnly.length).toBeGreaterThan(0);
    const templates = operations.map((o) => ({ method: o.method, re: new RegExp(`^${o.path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
    for (const [name, p] of internalOnly) {
      const method = p.type === 'query' ? 'GET' : 'POST';
      for (const path of [`/${name}`, `/${name.replaceAll('.', '/')}`]) {
        const res = await app.request(method, path, { body: method === 'POST' ? {} : undefined });
        // Unless the path happens to fit a published one (then its id is refused as an id), nothing is there.
        const fits = templates.some((t) => t.method === method && t.re.test(path));
        expect([res.status, errorCode(res)], `${name} at ${path}`).toEqual(fits ? [400, 'validation_failed'] : [404, 'not_found']);
      }
    }
    // Old or unversioned paths are not served.
    for (const path of ['/api/v0/work', '/api/work', '/api/v2/work']) {
      const res = await app.fetch(new Request(`http://127.0.0.1:3000${path}`, { headers: { authorization: `Bearer ${app.ws.apiKey}` } }));
      expect(res.status, path).toBe(404);
      await res.text();
    }
  });

  it('API10:2023 Unsafe Consumption of APIs: what agents send is kept as data, byte for byte, and never changes how the service behaves', async () => {
    const hostile = {
      html: '<img src=x onerror="alert(1)"><script>alert(2)</script>',
      template: '{{constructor.constructor("alert(3)")()}} ${process.exit(1)}',
      sql: "'); drop table ledger_events; --",
      nested: JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'),
    };
    const work = await app.request('POST', '/work', { body: { title: hostile.html, description: `${hostile.template} ${hostile.sql}` } });
    expect(work.status).toBe(201);
    expect(work.body.data.task).toMatchObject({ title: hostile.html, description: `${hostile.template} ${hostile.sql}` });
    const run = await app.request('POST', '/runs', { body: { task_id: work.body.data.taskId } });
    const checkpoint = await app.request('POST', `/runs/${run.body.data.runId}/checkpoints`, {
      body: { label: hostile.html, state: hostile },
    });
    expect(checkpoint.status).toBe(201);
    const events = await app.request('GET', '/events/stream?type=run.checkpointed&limit=100');
    const stored = events.body.data.at(-1).payload;
    expect(JSON.stringify(stored)).toContain('"__proto__":{"polluted":true}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
    // The ledger table is still there, and the chain still verifies.
    const verified = await app.request('GET', '/ledger/verify');
    expect(verified.status).toBe(200);
    expect(verified.body.data.ok).toBe(true);
  });
});

// The key's secret never reaches the database: only its SHA-256 does, so the only comparison is an
// index lookup of a hash, whose timing says nothing about the secret (PostgreSQL: read off the wire).
if (testEngine() === 'postgres') {
  describe('OWASP API2:2023, on the wire', () => {
    it('a presented key is looked up by its hash: the secret itself is never sent to the database', async () => {
      const sent: Buffer[] = [];
      const proxy = await startDbProxy({ onClient: (client) => client.on('data', (chunk: Buffer) => sent.push(chunk)) });
      const wired = await startTestApp({}, { via: (url) => proxy.via(url), primaryName: 'wired' });
      try {
        sent.length = 0;
        const ok = await wired.request('GET', '/decisions');
        expect(ok.status).toBe(200);
        const near = `${wired.ws.apiKey.slice(0, -1)}${wired.ws.apiKey.endsWith('A') ? 'B' : 'A'}`;
        expect((await wired.request('GET', '/decisions', { key: near })).status).toBe(401);
        const wire = Buffer.concat(sent).toString('latin1');
        for (const secret of [wired.ws.apiKey, near]) {
          expect(wire).not.toContain(secret.slice(4));
          expect(wire).toContain(createHash('sha256').update(secret).digest('hex'));
        }
      } finally {
        await wired.close();
        await proxy.close();
      }
    });
  });
}
