/**
 * Hostile input against limits and number spellings: integer query parameters written any way but
 * plain decimal digits, and the web interface's /api/trpc refusing bad input with a sentence (as
 * REST does) instead of zod's dump of issues.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { internalClient } from '../support/internal';
import { integrate, writeWork } from '../support/ledger-tree';

let app: TestApp;
let api: ReturnType<typeof internalClient>;
let owner: TestMember;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
  api = internalClient(app.runtime);
  owner = await app.member('owner');
});
afterAll(async () => app?.close());

/** Spellings Number() reads as an integer that are not plain decimal digits. */
const LOOSE = ['0x10', '1.0', ' 1', '1 ', '1e1', '+1', '01', '0b1', '0o7', '16.'];

describe('integer query parameters take plain decimal digits only', () => {
  it('refuses every other spelling of a proof’s sequence and tree size (400 validation_failed, naming the parameter)', async () => {
    await writeWork(app, app.ws, 20);
    await integrate(app, app.ws);
    // The plain spellings work: the refusals below are about the spelling, not the value.
    expect((await app.request('GET', '/ledger/proofs/inclusion?sequence=16&tree_size=20')).status).toBe(200);
    expect((await app.request('GET', '/ledger/proofs/consistency?from=10&to=20')).status).toBe(200);
    for (const loose of LOOSE) {
      const q = encodeURIComponent(loose);
      for (const [path, param] of [
        [`/ledger/proofs/inclusion?sequence=${q}&tree_size=20`, 'query.sequence'],
        [`/ledger/proofs/inclusion?sequence=16&tree_size=${q}`, 'query.tree_size'],
        [`/ledger/proofs/consistency?from=${q}&to=20`, 'query.from'],
        [`/ledger/proofs/consistency?from=10&to=${q}`, 'query.to'],
      ] as const) {
        const res = await app.request('GET', path);
        expect(res.status, `${path} → ${res.text}`).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
        expect(res.body.error.details.issues[0].path).toBe(param);
        expect(res.body.error.message).toMatch(/plain decimal digits/);
      }
    }
  });

  it('refuses them in every other integer query parameter too (limits, lease and poll lengths)', async () => {
    for (const path of ['/decisions?limit=', '/tasks?limit=', '/runs?limit=', '/events/stream?limit=', '/operating-map?limit=']) {
      expect((await app.request('GET', `${path}10`)).status, path).toBe(200);
      for (const loose of ['0x10', '1e1', '+5', '05', '5.0']) {
        const res = await app.request('GET', `${path}${encodeURIComponent(loose)}`);
        expect(res.status, `${path}${loose} → ${res.text}`).toBe(400);
        expect(res.body.error.code).toBe('validation_failed');
      }
    }
    const sse = await app.request('GET', '/events/stream?format=sse&lease_ms=1e3');
    expect(sse.status, sse.text).toBe(400);
    expect(sse.body.error.details.issues[0].path).toBe('query.lease_ms');
  });
});

describe('the web interface’s /api/trpc refuses bad input with a sentence', () => {
  it('answers a field breaking its rule as REST does: "<field>: <rule>", details.issues, appCode validation_failed', async () => {
    const res = await api.query('decisions.list', { limit: 1000 }, { session: owner.session });
    expect(res.status).toBe(400);
    expect(res.code).toBe('validation_failed');
    expect(res.body.error.message).toBe('limit: Too big: expected number to be <=100');
    expect(res.body.error.data.details.issues).toEqual([{ path: 'limit', message: 'Too big: expected number to be <=100' }]);
    // Not zod's JSON dump of its issues.
    expect(res.body.error.message).not.toMatch(/^\s*\[/);
  });

  it('answers an unknown member of a write as REST does: unknown_field naming it', async () => {
    const res = await api.mutate(
      'workspaces.changeSettings',
      { workspace_id: app.ws.workspaceId, surprise: 1 },
      { session: owner.session },
    );
    expect(res.status).toBe(400);
    expect(res.code).toBe('unknown_field');
    expect(res.body.error.message).toBe('Unknown field: surprise.');
  });
});
