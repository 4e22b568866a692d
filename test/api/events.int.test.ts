/** GET /events/stream as JSON pages: cursors, limits, type filters, tenancy. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { encodeCursor } from '@/server/ledger/cursor';
import { compactJsonb } from '@/server/ledger/read';
import { ledgerEventSchema } from '@/server/api/schemas';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { testEngine } from '../support/engine';

let app: TestApp;
let ws: TestWorkspace;
let setupEvents: number;
beforeAll(async () => {
  app = await startTestApp();
  ws = await app.createWorkspace();
  setupEvents = (await app.request('GET', '/events/stream?limit=100', { key: ws.apiKey })).body.data.length;
  for (let i = 0; i < 7; i++) await app.request('POST', '/work', { key: ws.apiKey, body: { title: `task ${i}` } });
});
afterAll(async () => {
  await app?.close();
});

const get = (q: string, key = ws.apiKey) => app.request('GET', `/events/stream${q}`, { key });

describe('GET /events/stream', () => {
  it('pages through every event exactly once with opaque cursors', async () => {
    const seen: number[] = [];
    let cursor = '';
    let pages = 0;
    for (;;) {
      const res = await get(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.meta).toMatchObject({ apiVersion: '1', workspaceId: ws.workspaceId, limit: 3 });
      expect(res.body.data.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.data.map((e: { sequence: number }) => e.sequence));
      cursor = res.body.meta.nextCursor;
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      pages++;
      if (!res.body.meta.hasMore) break;
    }
    const total = setupEvents + 7;
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(pages).toBe(Math.ceil(total / 3));
    // At the end, the cursor marks the same position: polling with it returns nothing new yet.
    const tail = await get(`?cursor=${cursor}`);
    expect(tail.body.data).toEqual([]);
    expect(tail.body.meta.nextCursor).toBe(cursor);
    expect(tail.body.meta.hasMore).toBe(false);
    await app.request('POST', '/work', { key: ws.apiKey, body: { title: 'later' } });
    const next = await get(`?cursor=${cursor}`);
    expect(next.body.data.map((e: { eventType: string }) => e.eventType)).toEqual(['work.created']);
  });

  it('defaults to 50 and caps at 100', async () => {
    expect((await get('')).body.meta.limit).toBe(50);
    for (const bad of ['0', '101', '-1', 'abc', '1.5']) {
      const res = await get(`?limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });

  it('filters by one or several event types', async () => {
    const work = await get('?type=work.created&limit=100');
    expect(work.body.data.length).toBeGreaterThanOrEqual(7);
    expect(new Set(work.body.data.map((e: { eventType: string }) => e.eventType))).toEqual(new Set(['work.created']));
    const two = await get('?type=workspace.created&type=api_key.created');
    expect(two.body.data.map((e: { eventType: string }) => e.eventType).sort()).toEqual(['api_key.created', 'workspace.created']);
    const bad = await get('?type=Not-A-Type');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
  });

  it('filters and pages together without skipping', async () => {
    const first = await get('?type=work.created&limit=2');
    const second = await get(`?type=work.created&limit=2&cursor=${first.body.meta.nextCursor}`);
    const a = first.body.data.map((e: { sequence: number }) => e.sequence);
    const b = second.body.data.map((e: { sequence: number }) => e.sequence);
    expect(Math.min(...b)).toBeGreaterThan(Math.max(...a));
    expect(first.body.meta.hasMore).toBe(true);
  });

  it('refuses forged cursors and cursors of another workspace with 400 invalid_cursor', async () => {
    const mine = (await get('?limit=1')).body.meta.nextCursor as string;
    const forged = [
      'garbage',
      mine.slice(0, -2) + (mine.endsWith('AA') ? 'BB' : 'AA'),
      encodeCursor('not-the-server-secret', ws.workspaceId, 1),
      Buffer.from('c1.2.').toString('base64url'),
    ];
    for (const cursor of forged) {
      const res = await get(`?cursor=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
      expect(res.body.error.details.fields).toEqual(['query.cursor']);
    }
    const other = await app.createWorkspace();
    const theirs = await get(`?cursor=${mine}`, other.apiKey);
    expect(theirs.status).toBe(400);
    expect(theirs.body.error.code).toBe('invalid_cursor');
  });

  it('shows a workspace only its own events', async () => {
    const other = await app.createWorkspace();
    await app.request('POST', '/work', { key: other.apiKey, body: { title: 'theirs' } });
    const mine = await get('?limit=100');
    expect(mine.body.data.every((e: { workspaceId: string }) => e.workspaceId === ws.workspaceId)).toBe(true);
    const theirs = await get('?limit=100', other.apiKey);
    expect(theirs.body.data.every((e: { workspaceId: string }) => e.workspaceId === other.workspaceId)).toBe(true);
    expect(theirs.body.data.some((e: { payload: { task?: { title: string } } }) => e.payload.task?.title === 'theirs')).toBe(true);
  });

  it('requires a credential', async () => {
    const res = await app.request('GET', '/events/stream', { key: null });
    expect(res.status).toBe(401);
  });
});

describe('JSON pages served from ledger text (server/api/event-page.ts)', () => {
  /** GET with the raw body; a trace header sends the request through the procedure instead. */
  const raw = async (q: string, throughProcedure: boolean) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ws.apiKey}` };
    if (throughProcedure) headers['x-correlation-id'] = '0b0b7a1e-8f0d-4a43-9a55-6d0e4c1f7a01';
    const res = await app.fetch(new Request(`http://127.0.0.1:3000/api/v1/events/stream${q}`, { headers }));
    return { status: res.status, text: await res.text() };
  };

  it('are byte for byte the pages the procedure serves, payloads with escapes, spaces and non-ASCII text included', async () => {
    for (const title of ['a "quoted" \\ title: with, spaces', 'ünïcødé — 字 🎉', 'tab\tnew\nline \u0001 end']) {
      expect((await app.request('POST', '/work', { key: ws.apiKey, body: { title, estimate_hours: 0.30000000000000004 } })).status).toBe(
        201,
      );
    }
    // Walked to the end, plain and filtered: the last page says hasMore false on both paths.
    for (const filter of ['', '&type=work.created']) {
      let cursor = '';
      for (;;) {
        const q = `?limit=2${filter}${cursor ? `&cursor=${cursor}` : ''}`;
        const [fast, slow] = [await raw(q, false), await raw(q, true)];
        expect(fast.text).toBe(slow.text);
        const page = JSON.parse(fast.text);
        if (!page.meta.hasMore) break;
        cursor = page.meta.nextCursor;
      }
    }
    let cursor = '';
    for (;;) {
      const q = `?limit=4${cursor ? `&cursor=${cursor}` : ''}`;
      const [fast, slow] = [await raw(q, false), await raw(q, true)];
      expect(fast.status).toBe(200);
      expect(fast.text).toBe(slow.text);
      const page = JSON.parse(fast.text);
      for (const event of page.data) expect(Object.keys(event)).toEqual(Object.keys(ledgerEventSchema.shape));
      if (!page.meta.hasMore) break;
      cursor = page.meta.nextCursor;
    }
    for (const q of ['?type=work.created&limit=2', '?type=work.created&type=api_key.created', '?limit=100', '']) {
      const [fast, slow] = [await raw(q, false), await raw(q, true)];
      expect(fast.status).toBe(200);
      expect(fast.text).toBe(slow.text);
    }
  });

  it('leave every refusal to the procedure: the same errors as before', async () => {
    for (const q of ['?limit=0', '?limit=5&limit=6', '?cursor=forged', '?cursor=', '?type=Bad!', '?unknown=1', '?lease_ms=5']) {
      const res = await get(q);
      expect(res.status, q).toBe(400);
      expect(['validation_failed', 'invalid_cursor', 'unknown_field']).toContain(res.body.error.code);
    }
    expect((await get('', null as never)).status).toBe(401);
  });

  it('compactJsonb removes only the spaces jsonb writes between tokens', () => {
    expect(compactJsonb(String.raw`{"a": 1, "b": [1, 2, {"c d": "e, f: g"}], "h": "\\", "i": "\\\" j"}`)).toBe(
      String.raw`{"a":1,"b":[1,2,{"c d":"e, f: g"}],"h":"\\","i":"\\\" j"}`,
    );
    expect(compactJsonb('{}')).toBe('{}');
  });

  if (testEngine() === 'postgres') {
    it('a plain page is read as text; a request with something to check goes through the procedure', async () => {
      // One connection, so the statements the requests prepared are those this session lists.
      const single = await startTestApp({ DB_POOL_MAX: '1' });
      try {
        const statements = async () =>
          (await query<{ statement: string }>(single.runtime.db, sql`select statement from pg_prepared_statements`)).map(
            (r) => r.statement,
          );
        const read = (headers: Record<string, string>) =>
          single.fetch(
            new Request('http://127.0.0.1:3000/api/v1/events/stream?limit=5', {
              headers: { authorization: `Bearer ${single.ws.apiKey}`, ...headers },
            }),
          );
        expect((await read({})).status).toBe(200);
        const afterPlain = await statements();
        expect(afterPlain.filter((t) => t.includes('"payload"::text'))).toHaveLength(1);
        expect(afterPlain.filter((t) => t.includes('from "ledger_events"') && !t.includes('"payload"::text'))).toHaveLength(0);
        expect((await read({ 'x-correlation-id': '0b0b7a1e-8f0d-4a43-9a55-6d0e4c1f7a01' })).status).toBe(200);
        expect((await statements()).filter((t) => t.includes('from "ledger_events"') && !t.includes('"payload"::text'))).toHaveLength(1);
      } finally {
        await single.close();
      }
    });
  }
});
