/** The public receipt validator: metadata, schema, and the exact limits of POST …/validate. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleReceipt } from '@/server/domain/receipts/sample';
import { generateNoteKey, vkeyOf } from '@/server/ledger/note';
import { startTestApp, type TestApp } from '../support/app';
import { integrate } from '../support/ledger-tree';
import { receiptProofHolds } from '../support/readme-verifier';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const post = (rawBody: string | ReadableStream<Uint8Array>, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  app.request('POST', '/agent-work-receipts/validate', { key: null, rawBody, headers });

/** A valid receipt padded with trailing whitespace to exactly `bytes` bytes. */
function receiptOfSize(bytes: number): string {
  const text = JSON.stringify(sampleReceipt());
  return text + ' '.repeat(bytes - Buffer.byteLength(text));
}

describe('receipt validator', () => {
  it('publishes its metadata and schema without a credential', async () => {
    const meta = await app.request('GET', '/agent-work-receipts/validate', { key: null });
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({
      name: 'Agent Work Receipt',
      schema_version: 'agent-work-receipt/v0.1',
      account_required: false,
      persists_submissions: false,
      max_bytes: 262144,
      validation_limits: { max_depth: 64, max_nodes: 50000, max_issues: 100, apply_before_schema: true },
    });
    expect(meta.body.schema_url).toMatch(/\/api\/v1\/agent-work-receipts\/schema$/);
    expect(meta.body.validation_endpoint).toMatch(/\/api\/v1\/agent-work-receipts\/validate$/);
    expect(meta.body.import_endpoint).toMatch(/\/api\/v1\/agent-work-receipts\/import$/);
    const schema = await app.request('GET', '/agent-work-receipts/schema', { key: null });
    expect(schema.body).toEqual(meta.body.schema);
    expect(schema.body.properties.schema_version.const).toBe('agent-work-receipt/v0.1');
  });

  it('validates a document and stores nothing', async () => {
    await app.expectUnchanged(async () => {
      const ok = await post(JSON.stringify(sampleReceipt()));
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ ok: true, valid: true, issues: [] });
      const bad = await post(JSON.stringify({ ...sampleReceipt(), status: 'great' }));
      expect(bad.body).toMatchObject({ ok: true, valid: false, issues: [{ path: '/status' }] });
    });
  });

  it('reads no query: any parameter, __proto__ included, leaves the validation and its shape as they are; the import refuses one', async () => {
    for (const query of ['?colour=red', '?__proto__=x', '?constructor=y']) {
      const ok = await app.request('POST', `/agent-work-receipts/validate${query}`, {
        key: null,
        rawBody: JSON.stringify(sampleReceipt()),
        headers: { 'content-type': 'application/json' },
      });
      expect([ok.status, ok.body], query).toEqual([200, { ok: true, valid: true, issues: [] }]);
      const imported = await app.request('POST', `/agent-work-receipts/import${query}`, { rawBody: JSON.stringify(sampleReceipt()) });
      expect([imported.status, imported.body.error?.code, imported.body.error?.details.fields], query).toEqual([
        400,
        'unknown_field',
        [`query.${query.slice(1).split('=')[0]}`],
      ]);
    }
  });

  it('takes 262144 bytes and refuses 262145 (413), counted while reading, chunked too', async () => {
    expect((await post(receiptOfSize(262_144))).body.valid).toBe(true);
    const over = await post(receiptOfSize(262_145));
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ ok: false, valid: false, error: { code: 'input.too_large' } });
    const text = receiptOfSize(262_145);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        const bytes = Buffer.from(text);
        for (let i = 0; i < bytes.length; i += 10_000) controller.enqueue(bytes.subarray(i, i + 10_000));
        controller.close();
      },
    });
    const res = await post(chunked);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('input.too_large');
  });

  it('depth 64 passes the traversal bounds, 65 is 422; 50000 nodes pass, 50001 are 422', async () => {
    const nest = (d: number) => JSON.stringify({ ...sampleReceipt(), rulings: JSON.parse('['.repeat(d - 1) + ']'.repeat(d - 1)) });
    // The receipt object is level 1 and rulings level 2: d levels in all.
    const at64 = await post(nest(64));
    expect(at64.status).toBe(200);
    expect(at64.body.valid).toBe(false); // past the bounds it reaches the schema, which refuses nested arrays
    const at65 = await post(nest(65));
    expect(at65.status).toBe(422);
    expect(at65.body.error.code).toBe('input.structure_limit');
    const base = sampleReceipt();
    const countNodes = (v: unknown): number =>
      v && typeof v === 'object' ? 1 + Object.values(v).reduce<number>((n, x) => n + countNodes(x), 0) : 1;
    const baseNodes = countNodes({ ...base, rulings: [] });
    const withNodes = (n: number) => JSON.stringify({ ...base, rulings: Array(n - baseNodes).fill(0) });
    expect((await post(withNodes(50_000))).status).toBe(200);
    const over = await post(withNodes(50_001));
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('input.structure_limit');
  });

  it('refuses duplicate keys, __proto__ keys and broken JSON with 400 input.invalid_json', async () => {
    const text = JSON.stringify(sampleReceipt());
    for (const body of [text.replace('"summary":', '"summary":"a","summary":'), text.replace('{', '{"__proto__":{},'), '{"a":', '\u00ff']) {
      const res = await post(body);
      expect(res.status, body.slice(0, 40)).toBe(400);
      expect(res.body.error.code).toBe('input.invalid_json');
    }
  });

  it('reports at most 100 of 1000 schema errors', async () => {
    const r = sampleReceipt();
    r.evidence = Array.from({ length: 1000 }, () => ({ kind: 'file', digest: 'bad' }));
    const res = await post(JSON.stringify(r));
    expect(res.body.valid).toBe(false);
    expect(res.body.issues).toHaveLength(100);
    expect(res.body.issues[0]).toEqual({ path: '/evidence/0/digest', code: 'schema.pattern', message: expect.any(String) });
  });
});

describe('GET /receipts/{receiptId}', () => {
  it('exports a receipt made by POST /work, after its decisions are ruled, as a document the validator accepts', async () => {
    const work = await app.request('POST', '/work', { body: { title: 'Publish the report' } });
    const { taskId, receiptId } = work.body.data;
    const run = await app.request('POST', '/runs', { body: { task_id: taskId } });
    const approver = await app.member('approver');
    const raised = await app.request('POST', '/decisions', {
      body: { workspace_id: app.ws.workspaceId, title: 'Publish?', task_id: taskId, run_id: run.body.data.runId, blocks_task: true },
    });
    const ruled = await app.request('POST', `/decisions/${raised.body.decision.id}/approve`, {
      session: approver.session,
      body: { note: 'Go ahead' },
    });
    expect(ruled.status).toBe(200);
    await app.request('POST', `/runs/${run.body.data.runId}/actions/resume`, { body: {} });
    await app.request('POST', `/runs/${run.body.data.runId}/finish`, { body: { outcome: 'completed' } });

    const exported = await app.request('GET', `/receipts/${receiptId}`);
    expect(exported.status).toBe(200);
    const doc = exported.body;
    expect(doc).toMatchObject({
      schema_version: 'agent-work-receipt/v0.1',
      receipt_id: receiptId,
      workspace_id: app.ws.workspaceId,
      task: { id: taskId, title: 'Publish the report', status: 'done' },
      status: 'completed',
      actor: { type: 'api_key', id: app.ws.apiKeyId },
      // The run that produced it, with its fence.
      run: { run_id: run.body.data.runId, fence: 1, status: 'completed' },
    });
    expect(doc.rulings).toEqual([
      expect.objectContaining({
        outcome: 'approved',
        option_ids: ['approve'],
        note: 'Go ahead',
        resolved_by: approver.userId,
        resolved_by_type: 'human',
      }),
    ]);
    // The task's events, in order, each the ledger's own (same hashes as the event stream).
    // Created; then in_progress (run), blocked (decision), paused (approved with no continuation:
    // the hold ends), in_progress (resumed), done (finished).
    expect(doc.events.map((e: { eventType: string }) => e.eventType)).toEqual(['work.created', ...Array(5).fill('task.status_changed')]);
    const stream = (await app.request('GET', '/events/stream?limit=100')).body.data as { id: string; eventHash: string }[];
    for (const e of doc.events) expect(stream.find((s) => s.id === e.id)?.eventHash).toBe(e.eventHash);

    const validated = await post(JSON.stringify(doc));
    expect(validated.body).toEqual({ ok: true, valid: true, issues: [] });
  });

  it('carries the proof that its recording event is in the signed ledger, once a checkpoint covers it, checked from docs/verification.md alone', async () => {
    const ws = await app.createWorkspace();
    const work = await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'Proven' } });
    const { receiptId } = work.body.data;
    // Before the integrator has signed a tree holding it: no proof yet, and still a valid document.
    const early = (await app.request('GET', `/receipts/${receiptId}`, { key: ws.apiKey })).body;
    expect(early.ledger_proof).toBeUndefined();
    expect((await post(JSON.stringify(early))).body).toMatchObject({ valid: true });

    await integrate(app, ws);
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'Later' } });
    await integrate(app, ws);
    const doc = (await app.request('GET', `/receipts/${receiptId}`, { key: ws.apiKey })).body;
    const checkpoint = (await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data;
    const sequence = doc.events[0].sequence as number;
    expect(doc.ledger_proof).toMatchObject({ checkpoint: checkpoint.note, leaf_index: sequence - 1, tree_size: checkpoint.tree_size });
    expect(doc.evidence[0].digest).toBe(doc.events[0].eventHash);
    expect((await post(JSON.stringify(doc))).body).toEqual({ ok: true, valid: true, issues: [] });
    // What GET /ledger/proofs/inclusion serves, and a verifier written from docs/verification.md accepts it.
    const served = (await app.request('GET', `/ledger/proofs/inclusion?sequence=${sequence}`, { key: ws.apiKey })).body.data;
    expect(doc.ledger_proof.inclusion_path).toEqual(served.inclusion_path);
    const [key] = (await app.request('GET', '/ledger/keys', { key: ws.apiKey })).body.data as { vkey: string }[];
    expect(receiptProofHolds(doc, key!.vkey)).toBe(true);
    // A path changed, another leaf, or another key: refused.
    const flipped = structuredClone(doc);
    flipped.ledger_proof.inclusion_path[0] = Buffer.alloc(32).toString('base64');
    expect(receiptProofHolds(flipped, key!.vkey)).toBe(false);
    const other = structuredClone(doc);
    other.evidence[0].digest = doc.events[1]?.eventHash ?? `sha256:${'0'.repeat(64)}`;
    expect(receiptProofHolds(other, key!.vkey)).toBe(false);
    // Another key of the same name (a forger's): its key id differs, and so would its signature.
    const forger = vkeyOf(generateNoteKey(key!.vkey.split('+')[0]!));
    expect(receiptProofHolds(doc, forger)).toBe(false);
  });

  it('is 404 for another workspace’s receipt or an unknown one; a viewer may read', async () => {
    const { receiptId } = (await app.request('POST', '/work', { body: { title: 'x' } })).body.data;
    const other = await app.createWorkspace();
    expect((await app.request('GET', `/receipts/${receiptId}`, { key: other.apiKey })).status).toBe(404);
    expect((await app.request('GET', `/receipts/${crypto.randomUUID()}`)).status).toBe(404);
    const viewer = await app.member('viewer');
    expect((await app.request('GET', `/receipts/${receiptId}`, { session: viewer.session })).status).toBe(200);
  });
});

describe('POST /agent-work-receipts/import', () => {
  const importDoc = (body: string, key?: string | null) =>
    app.request('POST', '/agent-work-receipts/import', { rawBody: body, headers: { 'content-type': 'application/json' }, key });

  it('stores a valid document with one receipt.imported event; the same again is a duplicate; GET /receipts returns it as sent', async () => {
    const doc = sampleReceipt();
    const before = await app.counts();
    const first = await importDoc(JSON.stringify(doc));
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({
      receipt_id: doc.receipt_id,
      duplicate: false,
      document_digest: expect.stringMatching(/^sha256:/),
    });
    expect((await app.counts()).events).toBe(before.events! + 1);
    await app.expectUnchanged(async () => {
      const again = await importDoc(JSON.stringify(doc, null, 2));
      expect(again.status).toBe(200);
      expect(again.body.data).toMatchObject({ duplicate: true, event: null, document_digest: first.body.data.document_digest });
    });
    const exported = await app.request('GET', `/receipts/${doc.receipt_id}`);
    expect(exported.body).toEqual(doc);
    const events = await app.request('GET', '/events/stream?type=receipt.imported&limit=100');
    const recorded = events.body.data.at(-1);
    expect(recorded).toMatchObject({ aggregateId: doc.receipt_id, payload: { document: doc } });
    // The answer names the event as a resource does (snake_case), and the deprecated eventHash beside it.
    expect(first.body.data.event).toEqual({
      id: recorded.id,
      sequence: recorded.sequence,
      event_hash: recorded.eventHash,
      eventHash: recorded.eventHash,
    });
    // Another workspace cannot see it.
    const other = await app.createWorkspace();
    expect((await app.request('GET', `/receipts/${doc.receipt_id}`, { key: other.apiKey })).status).toBe(404);
  });

  it('refuses a different document under the same receipt_id (409), invalid documents (400), no key (401), too large (413); nothing written', async () => {
    const doc = sampleReceipt();
    expect((await importDoc(JSON.stringify(doc))).status).toBe(201);
    await app.expectUnchanged(async () => {
      const changed = await importDoc(JSON.stringify({ ...doc, summary: 'rewritten' }));
      expect(changed.status).toBe(409);
      expect(changed.body.error.code).toBe('receipt_conflict');
      const invalid = await importDoc(JSON.stringify({ ...sampleReceipt(), status: 'great' }));
      expect(invalid.status).toBe(400);
      expect(invalid.body.error).toMatchObject({ code: 'validation_failed', details: { issues: [{ path: '/status' }] } });
      const dup = await importDoc(JSON.stringify(sampleReceipt()).replace('"summary":', '"summary":"a","summary":'));
      expect(dup.body.error.code).toBe('invalid_json');
      expect((await importDoc(JSON.stringify(sampleReceipt()), null)).status).toBe(401);
      expect((await importDoc(receiptOfSize(262_145))).status).toBe(413);
    });
  });

  it('the imported receipts table equals the ledger replayed', async () => {
    const { replayWorkspace } = await import('@/server/projections/rebuild');
    const { loadFromTables } = await import('@/server/projections/state');
    const replayed = await replayWorkspace(app.runtime.db, app.ws.workspaceId);
    expect(replayed.state).toEqual(await loadFromTables(app.runtime.db, app.ws.workspaceId));
  });
});
