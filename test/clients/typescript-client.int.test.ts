/**
 * The typed client (clients/typescript) against the real transport over sockets: its event stream
 * resumes after a lease is cut mid-stream, from the last event it yielded, with no gap and no
 * repeat; it refuses a stream whose links do not hold; it sends one Idempotency-Key per write; it
 * claims work and keeps (or loses) a run's lease; it registers artifacts with their digest and
 * downloads them checked against it; and its types carry decision policies.
 * (The retry of a 503 from a stopped database: typescript-client.postgres.int.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  ChainBreakError,
  createAwsClient,
  DigestMismatchError,
  GrantRefusedError,
  LeaseLostError,
  type LedgerEvent,
} from '@/clients/typescript';
import { expireLapsedLeases } from '@/server/domain/runs/lease-expiry';
import { startTestApp, type TestApp } from '../support/app';
import { startDbProxy, type DbProxy } from '../support/db-proxy';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

let app: TestApp;
// A TCP proxy between the client and the server, to cut the lease's connection from outside.
let cut: DbProxy;
beforeAll(async () => {
  app = await startTestApp();
  cut = await startDbProxy();
});
afterAll(async () => {
  await cut?.close();
  await app?.close();
});

const write = async (title: string) => expect((await app.request('POST', '/work', { body: { title } })).status).toBe(201);

describe('the typed client', () => {
  it('resumes the event stream after its lease is cut mid-stream, from the last event, with no gap and no repeat', async () => {
    const aws = createAwsClient({ baseUrl: `${cut.via(app.url)}api/v1`, apiKey: app.ws.apiKey });
    for (let i = 0; i < 3; i++) await write(`before the cut ${i}`);
    const head = async () => (await app.request('GET', '/ledger/verify')).body.data.head.sequence as number;
    const seen: LedgerEvent[] = [];
    const stop = new AbortController();
    const reading = (async () => {
      for await (const event of aws.events({ signal: stop.signal, leaseMs: 60_000, reconnectDelayMs: 50 })) seen.push(event);
    })();
    const before = await head();
    await until(() => seen.length >= before, 10_000, `${before} events`);

    // The connection is cut under the open lease, and events are written while it is down.
    await cut.down();
    for (let i = 0; i < 3; i++) await write(`during the cut ${i}`);
    await sleep(200);
    await cut.up();
    for (let i = 0; i < 2; i++) await write(`after the cut ${i}`);
    const after = await head();
    await until(() => seen.length >= after, 15_000, `${after} events`);
    stop.abort();
    await reading;

    expect(seen.map((e) => e.sequence)).toEqual(Array.from({ length: after }, (_, i) => i + 1));
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.previousHash).toBe(seen[i - 1]!.eventHash);
  });

  it('stops with ChainBreakError when an event does not link to the one before', async () => {
    await write('one more');
    // The server's answer with one link changed on its way to the client.
    const tampering: typeof fetch = async (input) => {
      const response = await fetch(input);
      if (!response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
      const text = await response.text();
      let frames = 0;
      const changed = text.replace(/"previousHash":"sha256:[0-9a-f]{64}"/g, (m) =>
        ++frames === 3 ? `"previousHash":"sha256:${'f'.repeat(64)}"` : m,
      );
      return new Response(changed, { status: response.status, headers: response.headers });
    };
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: app.ws.apiKey, fetch: tampering });
    const seen: number[] = [];
    const reading = (async () => {
      for await (const event of aws.events({ leaseMs: 200 })) seen.push(event.sequence);
    })();
    await expect(reading).rejects.toBeInstanceOf(ChainBreakError);
    expect(seen).toEqual([1, 2]);
  });

  it('registers an artifact with its digest, and downloads its bytes checked against it (DigestMismatchError when they differ)', async () => {
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: app.ws.apiKey });
    const report = `# Report\n\nÅ line with UTF-8 ✓ ${Date.now()}\n`;
    const artifact = await aws.artifacts.register({
      artifactType: 'test_report',
      title: 'Report',
      mediaType: 'text/markdown',
      content: report,
    });
    expect(artifact.digest).toBe(`sha256:${createHash('sha256').update(report).digest('hex')}`);
    expect(artifact.size_bytes).toBe(Buffer.byteLength(report));
    const { bytes } = await aws.artifacts.download(artifact.id);
    expect(Buffer.from(bytes).toString()).toBe(report);

    // The bytes changed on their way to the client: refused.
    const tampering: typeof fetch = async (input) => {
      const response = await fetch(input);
      if (!new URL((input as Request).url).pathname.endsWith('/content')) return response;
      return new Response('not the report', { status: 200, headers: response.headers });
    };
    const tampered = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: app.ws.apiKey, fetch: tampering });
    await expect(tampered.artifacts.download(artifact.id)).rejects.toBeInstanceOf(DigestMismatchError);
  });

  it('speaks decision policies in the types it was generated with: a policy on a decision, the workspace’s rules, a dry run', async () => {
    const ws = await app.createWorkspace();
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: ws.apiKey });
    const rules = await aws.api.PUT('/decision-policy', {
      body: { rules: [{ match: { tool: 'payments.*', urgency: ['urgent'] }, policy: { approvals_required: 1, veto: false } }] },
    });
    expect(rules.data?.version).toBe(1);
    const raised = await aws.api.POST('/decisions', {
      body: { workspace_id: ws.workspaceId, title: 'Pay?', action: { tool: 'payments.send', arguments: { cents: 1 } } },
    });
    const decision = raised.data!.decision;
    expect(decision.policy.veto).toBe(false);
    expect(decision.policy_source).toEqual({ type: 'rule', rule_index: 0, rules_version: 1 });
    expect(decision.approvals).toEqual([]);
    const dry = await aws.api.POST('/decision-policy/dry-run', { body: { rules: [] } });
    expect(dry.data?.totals).toEqual({ decisions: 0, would_change: 0, would_be: { approved: 0, declined: 0, pending: 0 } });
  });

  it('sends one Idempotency-Key per write, a UUID unless the caller gives one; reads carry none', async () => {
    const keys: (string | null)[] = [];
    const recording: typeof fetch = async (input) => {
      keys.push((input as Request).headers.get('idempotency-key'));
      return fetch(input);
    };
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: app.ws.apiKey, fetch: recording });
    const created = await aws.api.POST('/work', { body: { title: 'keyed by the client' } });
    expect(created.response.status).toBe(201);
    const mine = await aws.api.POST('/work', { body: { title: 'keyed by me' }, params: { header: { 'idempotency-key': 'my-key-1' } } });
    expect(mine.response.status).toBe(201);
    await aws.api.GET('/workspace');
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(keys.slice(1)).toEqual(['my-key-1', null]);
  });

  it('consumes a grant once with grants.consume, and says why not after (GrantRefusedError)', async () => {
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: app.ws.apiKey });
    const approver = await app.member('approver');
    const action = { tool: 'send_invoice', arguments: { customer: 'acme', amount: 1200 } };
    const raised = await aws.api.POST('/decisions', { body: { workspace_id: app.ws.workspaceId, title: 'Send it?', action } });
    const id = raised.data!.decision.id;
    const approved = await app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body: {} });
    expect(approved.status).toBe(200);
    // The token is shown to the key that raised the decision.
    const grant = (await aws.api.GET('/decisions/{id}', { params: { path: { id } } })).data!.decision.grant!;
    const token = grant.token!;
    const digest = raised.data!.decision.action_digest!;
    await expect(aws.grants.consume(token, 'sha256:' + '0'.repeat(64))).rejects.toMatchObject({
      status: 409,
      code: 'grant_mismatch',
    });
    expect(await aws.grants.consume(token, digest)).toMatchObject({ grant_id: grant.id, decision_id: id });
    const again = await aws.grants.consume(token, digest).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(GrantRefusedError);
    expect(again).toMatchObject({ status: 409, code: 'grant_used', details: { grant_id: grant.id } });
  });

  it('sends a write that got no answer again, with the same Idempotency-Key, and it happens once', async () => {
    const aws = createAwsClient({ baseUrl: `${cut.via(app.url)}api/v1`, apiKey: app.ws.apiKey });
    const title = `sent while the connection was down ${Date.now()}`;
    await cut.down();
    const writing = aws.api.POST('/work', { body: { title } });
    await sleep(400);
    await cut.up();
    const { response } = await writing;
    expect(response.status).toBe(201);
    const listed = await app.request('GET', `/tasks?limit=100&sort=updated`);
    expect(listed.body.data.filter((t: { title: string }) => t.title === title)).toHaveLength(1);
  });

  it('claims the next ready task with claim(), and answers null when nothing is ready', async () => {
    const ws = await app.createWorkspace('client-claims');
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: ws.apiKey });
    expect(await aws.claim({ agentId: 'agent-a' })).toBeNull();
    await aws.api.POST('/work', { body: { title: 'one thing to do', priority: 'high' } });
    const claimed = await aws.claim({ agentId: 'agent-a', filters: { priority: ['high'] }, leaseSeconds: 30 });
    expect(claimed).toMatchObject({
      task: { title: 'one thing to do', status: 'in_progress' },
      run: { agent_id: 'agent-a', fence: 1, lease_seconds: 30 },
    });
    expect(await aws.claim({ agentId: 'agent-b' })).toBeNull();
  });

  it('withLease heartbeats at a third of the lease while the work runs longer than the lease, then stops', async () => {
    const ws = await app.createWorkspace('client-lease-kept');
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: ws.apiKey });
    await aws.api.POST('/work', { body: { title: 'long work' } });
    const { run } = (await aws.claim({ agentId: 'agent-a', leaseSeconds: 5 }))!;
    const result = await aws.withLease(run, async (signal) => {
      await sleep(6_500);
      return signal.aborted ? 'aborted' : 'done';
    });
    expect(result).toBe('done');
    const renewed = async () => {
      const page = await aws.api.GET('/events/stream', { params: { query: { type: ['run.lease_renewed'], limit: 50 } } });
      return page.data!.data.filter((e) => e.aggregateId === run.runId).length;
    };
    // 6.5 s at one beat every 5/3 s: three beats (a fourth would come at 6.67 s).
    expect(await renewed()).toBe(3);
    const after = await aws.api.GET('/runs/{runId}', { params: { path: { runId: run.runId } } });
    expect(after.data!.data.status).toBe('running');
    // No beat once the work is done.
    await sleep(2_000);
    expect(await renewed()).toBe(3);
  });

  it('withLease aborts the work’s signal and rejects with LeaseLostError once the lease is lost', async () => {
    const ws = await app.createWorkspace('client-lease-lost');
    const aws = createAwsClient({ baseUrl: `${app.url}/api/v1`, apiKey: ws.apiKey });
    await aws.api.POST('/work', { body: { title: 'work that will be lost' } });
    const { run } = (await aws.claim({ agentId: 'agent-a', leaseSeconds: 6 }))!;
    let aborted: unknown;
    const outcome = aws
      .withLease(run, (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject((aborted = signal.reason)))))
      .catch((e: unknown) => e);
    // The service takes the lease away (as its job does once a lease lapses).
    expect(
      await expireLapsedLeases(app.runtime.db, { now: new Date(Date.now() + 3_600_000), holder: 'client-test' }),
    ).toBeGreaterThanOrEqual(1);
    const lost = await outcome;
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ runId: run.runId, code: 'lease_expired' });
    expect(aborted).toBe(lost);
  });
});
