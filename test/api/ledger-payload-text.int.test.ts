/**
 * The payload kept as the exact canonical text it was hashed as (migration 0021),
 * on both engines: the append stores payload_text and no jsonb copy; reads serve it; verification
 * hashes it as it is (REST, the worker threads reading COPY on PostgreSQL or pages on PGlite, and
 * the page's steps), alongside events appended before, which keep their payload as jsonb and are
 * canonicalized as before; and a stored text changed by a single byte is caught.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { canonicalJson, digestOf, eventHashOf, sha256Hex, type LedgerEvent } from '@/server/ledger/canonical';
import { GENESIS, type VerifyReport } from '@/server/ledger/chain';
import { verifyStep, verifyWorkspace, type VerifyProgress } from '@/server/ledger/verify';
import { verifyWorkspaceParallel } from '@/server/ledger/verify-parallel';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
});
afterAll(async () => app?.close());

// Quotes, a backslash, a newline, a tab, non-ASCII and an astral character: what COPY's text
// format escapes, and what JCS writes as it is.
const AWKWARD = 'a "quoted" \\ path\nnext\tline — café 𝄞';

async function stored(ws: TestWorkspace) {
  return query<{ sequence: string | number; payload: unknown; payload_text: string | null; payload_digest: string }>(
    app.runtime.db,
    sql`select sequence, payload, payload_text, payload_digest from ledger_events where workspace_id = ${ws.workspaceId} order by sequence`,
  );
}

/** The three verifiers' reports (the page's in steps of 2 events). */
async function reports(ws: TestWorkspace): Promise<VerifyReport[]> {
  const steps = async () => {
    let progress: VerifyProgress = { position: GENESIS, checkedEvents: 0, head: null };
    for (;;) {
      const step = await verifyStep(app.runtime.db, ws.workspaceId, JSON.parse(JSON.stringify(progress)) as VerifyProgress, 2);
      if (step.done) return step.report;
      progress = step.progress;
    }
  };
  return [
    await verifyWorkspace(app.runtime.db, ws.workspaceId),
    await verifyWorkspaceParallel(app.runtime, ws.workspaceId, { workers: 2, pageSize: 3 }),
    await steps(),
  ];
}

/** Appends `n` events the way the service did before migration 0021: the payload as jsonb, no text. */
async function appendAsBefore(ws: TestWorkspace, n: number): Promise<void> {
  await app.runtime.db.transaction(async (tx) => {
    const [head] = await query<{ sequence: string | number; head_hash: string; owner_id: string }>(
      tx,
      sql`select h.sequence, h.head_hash, (select owner_id from ledger_events e where e.workspace_id = h.workspace_id limit 1) as owner_id
            from ledger_heads h where h.workspace_id = ${ws.workspaceId} for update`,
    );
    let sequence = Number(head!.sequence);
    let previousHash = head!.head_hash;
    for (let i = 0; i < n; i++) {
      const payload = { key_id: `0000000${i}`, note: `${AWKWARD} ${i}`, n: 1.5e-7 * (i + 1), big: 1e21 };
      const id = randomUUID();
      const event: Omit<LedgerEvent, 'eventHash'> = {
        id,
        workspaceId: ws.workspaceId,
        sequence: ++sequence,
        ownerId: head!.owner_id,
        aggregateType: 'workspace',
        aggregateId: ws.workspaceId,
        aggregateVersion: 1000 + sequence,
        eventType: 'test.before_0021',
        schemaVersion: 1,
        actorType: 'system',
        actorId: 'system:test',
        payload,
        payloadDigest: digestOf(payload),
        occurredAtCanonical: new Date().toISOString(),
        idempotencyKey: null,
        causationId: id,
        correlationId: id,
        contextManifestDigest: digestOf({}),
        previousHash,
      };
      const eventHash = eventHashOf(event);
      await tx.execute(
        sql`insert into ledger_events (workspace_id, sequence, id, owner_id, aggregate_type, aggregate_id, aggregate_version,
              event_type, schema_version, actor_type, actor_id, payload, payload_digest, occurred_at, idempotency_key,
              causation_id, correlation_id, context_manifest_digest, previous_hash, event_hash)
            values (${event.workspaceId}, ${event.sequence}, ${event.id}, ${event.ownerId}, ${event.aggregateType}, ${event.aggregateId},
              ${event.aggregateVersion}, ${event.eventType}, ${event.schemaVersion}, ${event.actorType}, ${event.actorId},
              ${JSON.stringify(payload)}::jsonb, ${event.payloadDigest}, ${event.occurredAtCanonical}, null, ${event.causationId},
              ${event.correlationId}, ${event.contextManifestDigest}, ${previousHash}, ${eventHash})`,
      );
      previousHash = eventHash;
    }
    await tx.execute(
      sql`update ledger_heads set sequence = ${sequence}, head_hash = ${previousHash} where workspace_id = ${ws.workspaceId}`,
    );
  });
}

describe('the payload as the canonical text it was hashed as', () => {
  it('is what the append keeps (no jsonb copy), what reads serve, and what its digest covers', async () => {
    const ws = await app.createWorkspace();
    const created = await app.request('POST', '/work', { key: ws.apiKey, body: { title: AWKWARD, description: '1.0 and 1e21' } });
    expect(created.status, created.text).toBe(201);
    const rows = await stored(ws);
    expect(rows.length).toBeGreaterThan(1);
    for (const row of rows) {
      expect(row.payload).toBeNull();
      expect(row.payload_text).toBe(canonicalJson(JSON.parse(row.payload_text!)));
      expect(`sha256:${sha256Hex(row.payload_text!)}`).toBe(row.payload_digest);
    }
    const served = (await app.request('GET', '/events/stream?limit=100', { key: ws.apiKey })).body.data as LedgerEvent[];
    expect(served.map((e) => canonicalJson(e.payload))).toEqual(rows.map((r) => r.payload_text));
    expect(served.at(-1)!.payload).toMatchObject({ task: { title: AWKWARD } });
    for (const report of await reports(ws)) expect(report).toMatchObject({ verified: true, checkedEvents: rows.length });
  });

  it('verifies events kept before it (jsonb, canonicalized as before) and after it, in one chain', async () => {
    const ws = await app.createWorkspace();
    await appendAsBefore(ws, 4);
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: `after ${AWKWARD}` } });
    const rows = await stored(ws);
    expect(rows.filter((r) => r.payload_text === null)).toHaveLength(4);
    expect(rows.filter((r) => r.payload === null).length).toBeGreaterThan(0);
    for (const report of await reports(ws)) expect(report).toMatchObject({ verified: true, checkedEvents: rows.length, firstBreak: null });
    // Both kinds are served alike.
    const served = (await app.request('GET', '/events/stream?limit=100', { key: ws.apiKey })).body.data as LedgerEvent[];
    expect(served.filter((e) => e.eventType === 'test.before_0021').map((e) => e.payload.note)).toEqual(
      [0, 1, 2, 3].map((i) => `${AWKWARD} ${i}`),
    );
  });

  it('catches a stored text changed after the append, in every verifier', async () => {
    const ws = await app.createWorkspace();
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: AWKWARD } });
    const rows = await stored(ws);
    const target = rows.at(-1)!;
    // The same JSON value, written otherwise (a space): not the text that was hashed.
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(
        sql`update ledger_events set payload_text = ${target.payload_text!.replace(/^\{/, '{ ')}
             where workspace_id = ${ws.workspaceId} and sequence = ${target.sequence}`,
      );
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    });
    for (const report of await reports(ws)) {
      expect(report).toMatchObject({
        verified: false,
        firstBreak: { sequence: Number(target.sequence), reason: 'payload_digest_mismatch' },
      });
    }
  });
});
