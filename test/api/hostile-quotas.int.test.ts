/**
 * Hostile input against limits and number spellings: a workspace filling the store with artifact
 * content (its quota, also under concurrent registrations), integer query parameters written any
 * way but plain decimal digits, and the web interface's /api/trpc refusing bad input with a
 * sentence (as REST does) instead of zod's dump of issues.
 */
import { randomBytes } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { users, webauthnChallenges } from '@/db/schema';
import { createInternalTrpcHandler } from '@/server/api/internal';
import { hashPassword } from '@/server/auth/passwords';
import { encodeSession } from '@/server/auth/session';
import { storedBytesTotals } from '@/server/domain/artifacts/quota';
import { measureArtifactStorageWith } from '@/server/metrics';
import { metricValue } from '../support/metrics';
import { SoftAuthenticator } from '../support/soft-authenticator';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { internalClient } from '../support/internal';
import { integrate, writeWork } from '../support/ledger-tree';

let app: TestApp;
let api: ReturnType<typeof internalClient>;
let owner: TestMember;

beforeAll(async () => {
  app = await startTestApp({
    RATE_LIMIT_API_PER_MIN: '100000',
    ARTIFACT_QUOTA_BYTES: String(QUOTA),
    RATE_LIMIT_SESSION_WRITES_PER_MIN: String(SESSION_WRITES),
  });
  api = internalClient(app.runtime);
  owner = await app.member('owner');
});
afterAll(async () => app?.close());

/** A signed-in person's writes a minute here (each test's member stays well below it but the one that spends it). */
const SESSION_WRITES = 20;

/** A small quota, so that a few KiB fill it. */
const QUOTA = 4096;

const register = (key: string, bytes: Buffer) =>
  app.request('POST', '/artifacts', {
    key,
    body: { artifact_type: 'test_report', title: 'Report', media_type: 'text/plain', content: bytes.toString('base64') },
  });

/** What the workspace holds in artifact_contents, summed the slow way. */
async function heldBytes(workspaceId: string): Promise<number> {
  const [row] = await query<{ n: string | number | null }>(
    app.runtime.db,
    sql`select sum(octet_length(content)) as n from artifact_contents where workspace_id = ${workspaceId}`,
  );
  return Number(row?.n ?? 0);
}

describe('the quota of stored artifact content', () => {
  it('refuses content that would pass it (403 quota_exceeded with the figures), writing nothing; same bytes again and uris cost nothing', async () => {
    const ws = await app.createWorkspace();
    const first = randomBytes(1000);
    for (const bytes of [first, randomBytes(1000), randomBytes(1000), randomBytes(1000)]) {
      expect((await register(ws.apiKey, bytes)).status).toBe(201);
    }
    await app.expectUnchanged(async () => {
      const res = await register(ws.apiKey, randomBytes(200));
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.code).toBe('quota_exceeded');
      expect(res.body.error.details).toEqual({ used_bytes: 4000, limit_bytes: QUOTA, size_bytes: 200 });
      expect(res.body.error.message).toContain('4000 of 4096 bytes');
      // More than the whole quota at once, too.
      const huge = await register(ws.apiKey, randomBytes(QUOTA + 1));
      expect(huge.status).toBe(403);
      expect(huge.body.error.details).toEqual({ used_bytes: 4000, limit_bytes: QUOTA, size_bytes: QUOTA + 1 });
    });
    // The same bytes are stored once: registering them again costs nothing.
    expect((await register(ws.apiKey, first)).status).toBe(201);
    const external = await app.request('POST', '/artifacts', {
      key: ws.apiKey,
      body: {
        artifact_type: 'test_report',
        title: 'Far',
        media_type: 'text/plain',
        uri: 'https://example.com/r',
        sha256: 'a'.repeat(64),
        size_bytes: 1e9,
      },
    });
    expect(external.status, external.text).toBe(201);
    // Removing stored bytes gives their room back.
    const removed = await app.request('DELETE', `/artifacts/${(await register(ws.apiKey, first)).body.data.id}/content`, {
      key: ws.apiKey,
    });
    expect(removed.status, removed.text).toBe(200);
    expect((await register(ws.apiKey, randomBytes(1000))).status).toBe(201);
    expect(await heldBytes(ws.workspaceId)).toBe(4000);
    // Another workspace has a quota of its own.
    const other = await app.createWorkspace();
    expect((await register(other.apiKey, randomBytes(4000))).status).toBe(201);
  });

  it('lets exactly as many concurrent registrations through as fit, and counts what is stored', async () => {
    const ws = await app.createWorkspace();
    const answers = await Promise.all(Array.from({ length: 12 }, () => register(ws.apiKey, randomBytes(1000))));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(4);
    expect(statuses.filter((s) => s === 403)).toHaveLength(8);
    expect(await heldBytes(ws.workspaceId)).toBe(4000);
    const [usage] = await query<{ stored_bytes: string | number }>(
      app.runtime.db,
      sql`select stored_bytes from artifact_usage where workspace_id = ${ws.workspaceId}`,
    );
    expect(Number(usage?.stored_bytes)).toBe(4000);
  });

  it('is shown on the settings page’s query (used of limit) and in the metrics', async () => {
    const ws = await app.createWorkspace();
    expect((await register(ws.apiKey, randomBytes(1234))).status).toBe(201);
    const member = await app.member('owner', ws.workspaceId);
    const settings = await api.query('workspaces.settings', { workspace_id: ws.workspaceId }, { session: member.session });
    expect(settings.status).toBe(200);
    expect(settings.data.artifact_storage).toEqual({ used_bytes: 1234, limit_bytes: QUOTA });
    measureArtifactStorageWith(() => storedBytesTotals(app.runtime.db));
    const [held] = await query<{ total: string | number; largest: string | number }>(
      app.runtime.db,
      sql`select sum(n) as total, max(n) as largest
            from (select sum(octet_length(content)) as n from artifact_contents group by workspace_id) as w`,
    );
    expect(await metricValue('aws_artifact_content_bytes', { measure: 'total' })).toBe(Number(held?.total));
    expect(await metricValue('aws_artifact_content_bytes', { measure: 'largest_workspace' })).toBe(Number(held?.largest));
  });
});

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

describe('a signed-in person cannot flood the store through the web interface', () => {
  const ORIGIN = 'http://localhost:3000';
  const post = async (path: string, input: unknown, session: string) => {
    const trpc = createInternalTrpcHandler(async () => app.runtime);
    const headers = new Headers({ 'content-type': 'application/json', cookie: `next-auth.session-token=${session}`, origin: ORIGIN });
    const res = await trpc(new Request(`${ORIGIN}/api/trpc/${path}`, { method: 'POST', headers, body: JSON.stringify(input) }));
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };

  it('keeps at most 5 open passkey challenges per person: asking again drops the oldest, whose answer is then refused', async () => {
    const PASSWORD = 'correct horse battery staple';
    const member = await app.member('approver');
    await app.runtime.db
      .update(users)
      .set({ passwordHash: await hashPassword(PASSWORD) })
      .where(eq(users.id, member.userId));
    const asked = [];
    for (let i = 0; i < 8; i++) {
      const res = await post('account.passkeyOptions', {}, member.session);
      expect(res.status).toBe(200);
      asked.push(res.body.result.data as { challenge_id: string; options: { challenge: string } });
    }
    const open = await app.runtime.db
      .select({ id: webauthnChallenges.id })
      .from(webauthnChallenges)
      .where(eq(webauthnChallenges.userId, member.userId));
    expect(open.map((r) => r.id).sort()).toEqual(
      asked
        .slice(3)
        .map((a) => a.challenge_id)
        .sort(),
    );
    const device = new SoftAuthenticator('localhost', ORIGIN);
    const oldest = await post(
      'account.addPasskey',
      { challenge_id: asked[0]!.challenge_id, response: device.register(asked[0]!.options), current_password: PASSWORD },
      member.session,
    );
    expect(oldest.status).toBe(400);
    expect(oldest.body.error.message).toMatch(/unknown, used or expired/);
    const newest = await post(
      'account.addPasskey',
      { challenge_id: asked[7]!.challenge_id, response: device.register(asked[7]!.options), current_password: PASSWORD },
      member.session,
    );
    expect(newest.status, JSON.stringify(newest.body)).toBe(200);
  });

  it('limits a person’s writes a minute (429 in tRPC’s shape with Retry-After), whichever session they use', async () => {
    const member = await app.member('owner');
    const otherPerson = await app.member('owner');
    // Fixed one-minute windows: start well inside one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 100));
    const write = (session: string) => post('workspaces.changeSettings', { workspace_id: app.ws.workspaceId }, session);
    for (let i = 0; i < SESSION_WRITES; i++) expect((await write(member.session)).status).toBe(200);
    const refused = await write(member.session);
    expect(refused.status).toBe(429);
    expect(refused.body.error.data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429, appCode: 'rate_limited' });
    expect(refused.body.error.message).toMatch(/More than 20 requests a minute from your session/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // Signing in again buys no new budget: a second session of the same person is refused too.
    expect((await write(await encodeSession(member.userId, app.runtime.secrets.auth))).status).toBe(429);
    // Reads go on; another person's writes too.
    expect((await api.query('workspaces.settings', { workspace_id: app.ws.workspaceId }, { session: member.session })).status).toBe(200);
    expect((await write(otherPerson.session)).status).toBe(200);
  });
});
