/**
 * npm run ledger:verify's verifier (server/ledger/verify-parallel.ts): the digests computed by
 * worker threads from rows read by COPY (PostgreSQL) or in pages (PGlite), joined in order. Its
 * report must be verifyWorkspace's, for an intact chain and a tampered one, whatever the batches.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWorkspace } from '@/server/ledger/verify';
import { verifyWorkspaceParallel, type ParallelVerifyOptions } from '@/server/ledger/verify-parallel';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { testEngine } from '../support/engine';

let app: TestApp;
let ws: TestWorkspace;
const WRITES = 80;

// Text that COPY's text format escapes (backslash, tab, newline, carriage return, \b \f \v), JSON
// escapes (quotes, controls), and characters beyond ASCII: the hashes match only if every row is
// read back exactly as stored.
const TRICKY = ['tab\there', 'line\nbreak\r\n', 'back\\slash \\N \\t', '"quoted"', 'bell\u0007 \b\f\v', 'é 漢字 🦊', '\\'];

beforeAll(async () => {
  app = await startTestApp();
  ws = await app.createWorkspace();
  for (let i = 0; i < WRITES; i++) {
    const res = await app.request('POST', '/work', {
      key: ws.apiKey,
      body: { title: `${TRICKY[i % TRICKY.length]} ${i}`, description: TRICKY.join(' | ').repeat(1 + (i % 3)) },
      // Some events carry an idempotency key, some none (NULL in the row).
      headers: i % 2 === 0 ? { 'idempotency-key': `verify-${i}` } : {},
    });
    expect(res.status).toBe(201);
  }
});
afterAll(async () => {
  await app?.close();
});

// Small batches and COPY ranges (PostgreSQL), or pages (PGlite), so that the chain crosses many
// boundaries; each COPY range holds more than a stream's buffer (the driver's paused-socket hang,
// patches/README.md change 9, hung the second range).
const shapes: ParallelVerifyOptions[] = [
  { workers: 1 },
  { workers: 2, rangeEvents: 25, batchBytes: 4096, pageSize: 7 },
  { workers: 3, rangeEvents: 9, batchBytes: 1, pageSize: 1 },
];

describe(`ledger:verify on every core (${testEngine()})`, () => {
  it('verifies an intact chain with the report verifyWorkspace gives', async () => {
    const expected = await verifyWorkspace(app.runtime.db, ws.workspaceId);
    expect(expected).toMatchObject({ verified: true, firstBreak: null });
    expect(expected.checkedEvents).toBeGreaterThanOrEqual(WRITES);
    for (const opts of shapes) {
      const progress: number[] = [];
      const report = await verifyWorkspaceParallel(app.runtime, ws.workspaceId, {
        ...opts,
        onProgress: (checked) => progress.push(checked),
      });
      expect({ opts, report }).toEqual({ opts, report: expected });
      expect(progress.at(-1)).toBe(expected.head.sequence);
    }
  });

  it('finds the first break verifyWorkspace finds, and only that one', async () => {
    const other = await app.createWorkspace();
    for (let i = 0; i < 30; i++)
      await app.request('POST', '/work', { key: other.apiKey, body: { title: `${TRICKY[i % TRICKY.length]} ${i}` } });
    // Two tampered events: the earlier one is the break.
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(sql`update ledger_events set actor_id = 'forged' where workspace_id = ${other.workspaceId} and sequence = 29`);
      await tx.execute(
        sql`update ledger_events set payload_text = jsonb_set(payload_text::jsonb, '{task,title}', '"rewritten"')::text where workspace_id = ${other.workspaceId} and sequence = 12`,
      );
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    });
    const expected = await verifyWorkspace(app.runtime.db, other.workspaceId);
    expect(expected.firstBreak).toMatchObject({ sequence: 12, reason: 'payload_digest_mismatch' });
    for (const opts of shapes)
      expect({ opts, report: await verifyWorkspaceParallel(app.runtime, other.workspaceId, opts) }).toEqual({ opts, report: expected });
  });

  it('finds a head moved back, with events beyond it', async () => {
    const other = await app.createWorkspace();
    for (let i = 0; i < 6; i++) await app.request('POST', '/work', { key: other.apiKey, body: { title: `t${i}` } });
    await app.runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_heads disable trigger ledger_heads_forward_only`);
      await tx.execute(sql`update ledger_heads set sequence = sequence - 2 where workspace_id = ${other.workspaceId}`);
      await tx.execute(sql`alter table ledger_heads enable trigger ledger_heads_forward_only`);
    });
    const expected = await verifyWorkspace(app.runtime.db, other.workspaceId);
    expect(expected.firstBreak?.reason).toBe('head_mismatch');
    for (const opts of shapes) expect(await verifyWorkspaceParallel(app.runtime, other.workspaceId, opts)).toEqual(expected);
  });
});
