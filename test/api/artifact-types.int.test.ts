/** GET /artifact-types: the global catalog, its caching headers, and serving stale when a refresh fails. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogFor } from '@/server/domain/artifact-types/catalog';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('GET /artifact-types', () => {
  it('lists at least 12 types across domains and stages, one at least describing run health', async () => {
    const res = await app.request('GET', '/artifact-types');
    expect(res.status).toBe(200);
    const { data, meta } = res.body;
    expect(meta).toEqual({ apiVersion: '1', scope: 'global', count: data.length, stale: false });
    expect(data.length).toBeGreaterThanOrEqual(12);
    expect(new Set(data.map((t: { domain: string }) => t.domain)).size).toBeGreaterThanOrEqual(4);
    expect(new Set(data.map((t: { stage: string }) => t.stage)).size).toBeGreaterThanOrEqual(4);
    expect(data.filter((t: { is_deliverable: boolean }) => !t.is_deliverable).map((t: { type_code: string }) => t.type_code)).toContain(
      'run_health_report',
    );
    expect(new Set(data.map((t: { type_code: string }) => t.type_code)).size).toBe(data.length);
    for (const t of data) {
      expect(Object.keys(t).sort()).toEqual([
        'default_persona',
        'domain',
        'is_deliverable',
        'label',
        'stage',
        'summary',
        'tags',
        'type_code',
        'workflow',
      ]);
    }
  });

  it('is the same for every workspace', async () => {
    const other = await app.createWorkspace();
    const a = await app.request('GET', '/artifact-types');
    const b = await app.request('GET', '/artifact-types', { key: other.apiKey });
    expect(b.body).toEqual(a.body);
    expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
  });

  it('is cacheable for five minutes with an ETag; a matching If-None-Match gets 304 without a body', async () => {
    const res = await app.request('GET', '/artifact-types');
    expect(res.headers.get('cache-control')).toBe('max-age=300');
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await app.request('GET', '/artifact-types', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    const weakAmongOthers = await app.request('GET', '/artifact-types', { headers: { 'if-none-match': `"nope", W/${etag}` } });
    expect(weakAmongOthers.status).toBe(304);
    const other = await app.request('GET', '/artifact-types', { headers: { 'if-none-match': '"something-else"' } });
    expect(other.status).toBe(200);
  });

  it('needs a credential and takes no workspace parameter', async () => {
    expect((await app.request('GET', '/artifact-types', { key: null })).status).toBe(401);
    const res = await app.request('GET', `/artifact-types?workspace_id=${app.ws.workspaceId}`);
    expect(res.body.error.code).toBe('unknown_field');
  });

  it('serves the last good load, marked stale, when a refresh fails; fresh again once it works', async () => {
    const good = await app.request('GET', '/artifact-types');
    const catalog = catalogFor(app.runtime.db);
    await app.runtime.db.execute(sql`alter table artifact_types rename to artifact_types_away`);
    try {
      catalog.expire();
      const stale = await app.request('GET', '/artifact-types');
      expect(stale.status).toBe(200);
      expect(stale.body.meta.stale).toBe(true);
      expect(stale.body.data).toEqual(good.body.data);
    } finally {
      await app.runtime.db.execute(sql`alter table artifact_types_away rename to artifact_types`);
    }
    catalog.expire();
    const fresh = await app.request('GET', '/artifact-types');
    expect(fresh.body.meta.stale).toBe(false);
  });

  it('with no good load yet and the store failing, answers 503', async () => {
    const lone = await startTestApp();
    try {
      await lone.runtime.db.execute(sql`alter table artifact_types rename to artifact_types_away`);
      const res = await lone.request('GET', '/artifact-types');
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      await lone.close();
    }
  });
});
