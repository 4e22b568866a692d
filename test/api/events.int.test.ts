/** GET /events/stream as JSON pages: cursors, limits, type filters, tenancy. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '@/server/ledger/cursor';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';

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
