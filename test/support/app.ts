/**
 * An integration-test instance of the API: a fresh database on the run's engine, the real REST
 * transport served over HTTP on 127.0.0.1 through the production node:http handler (http.ts), and
 * helpers to make workspaces and keys and to count what a request wrote.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { query } from '@/db';
import { memberships, type MembershipRole } from '@/db/schema';
import { encodeSession } from '@/server/auth/session';
import { addMember } from '@/server/domain/workspaces/members';
import { createApiKey } from '@/server/domain/api-keys/api-keys';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { createWorkspace } from '@/server/domain/workspaces/create-workspace';
import { checkAgainstDocument } from './contract';
import { noteRequestBody } from './log-capture';
import { createTestRuntime, type RuntimeOptions, type TestRuntime } from './engine';
import { serveApi } from './http';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  /** API key (default: the primary workspace's); null sends none. Ignored when `session` is given. */
  key?: string | null;
  /** A signed-in human's session cookie value (see `member`). */
  session?: string;
  /** With `session`: the Origin header of a write (default: the app's own). */
  origin?: string | null;
  body?: unknown;
  /** Sent as is (overrides `body`). */
  rawBody?: string | Uint8Array | ReadableStream<Uint8Array>;
  headers?: Record<string, string>;
}

export interface TestWorkspace {
  workspaceId: string;
  ownerUserId: string;
  apiKey: string;
  apiKeyId: string;
}

export interface TestMember {
  userId: string;
  email: string;
  /** A next-auth session cookie value for this user. */
  session: string;
}

export interface TestApp {
  runtime: TestRuntime;
  /** Where the API is served (http://127.0.0.1:<port>; its paths start with /api/v1). */
  url: string;
  /** Sends a Request to the served API (its path and query; the origin is ignored). */
  fetch(request: Request): Promise<Response>;
  /** The default workspace of this app. */
  ws: TestWorkspace;
  request<T = any>(method: string, path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  createWorkspace(name?: string): Promise<TestWorkspace>;
  /** A human with `role` in the workspace (default: the primary one), signed in. */
  member(role: MembershipRole, workspaceId?: string): Promise<TestMember>;
  /** Row counts of the tables a write touches, for "nothing changed" assertions. */
  counts(): Promise<Record<string, number>>;
  /** Runs `action` and asserts it left no row, event or idempotency record behind. */
  expectUnchanged(action: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions extends RuntimeOptions {
  /** The primary workspace's name (unique per database: a second app on the same database needs another). */
  primaryName?: string;
}

export async function startTestApp(envOverrides: Record<string, string> = {}, opts: TestAppOptions = {}): Promise<TestApp> {
  const runtime = await createTestRuntime(envOverrides, opts);
  const server = await serveApi(runtime);

  const makeWorkspace = async (name = `ws-${randomUUID().slice(0, 8)}`): Promise<TestWorkspace> =>
    runtime.db.transaction(async (tx) => {
      const trace = systemTrace(randomUUID());
      const created = await createWorkspace(tx, trace, {
        name,
        owner: { email: `${name}@test.local`, displayName: name, passwordHash: 'not-a-real-hash' },
      });
      const actor: Actor = { type: 'system', id: 'system:test', ownerId: created.ownerUserId, workspaceId: created.workspaceId, trace };
      const key = await createApiKey(tx, actor, { name: 'test key' });
      return { workspaceId: created.workspaceId, ownerUserId: created.ownerUserId, apiKey: key.secret, apiKeyId: key.id };
    });

  const ws = await makeWorkspace(opts.primaryName ?? 'primary');

  const member = async (role: MembershipRole, workspaceId = ws.workspaceId): Promise<TestMember> => {
    const email = `${role}-${randomUUID().slice(0, 8)}@test.local`;
    const { userId } = await runtime.db.transaction(async (tx) => {
      const [owner] = await tx
        .select({ userId: memberships.userId })
        .from(memberships)
        .where(and(eq(memberships.workspaceId, workspaceId), eq(memberships.role, 'owner')));
      const actor: Actor = { type: 'system', id: 'system:test', ownerId: owner!.userId, workspaceId, trace: systemTrace(randomUUID()) };
      return addMember(tx, actor, { email, displayName: `${role} person`, passwordHash: 'not-a-real-hash', role });
    });
    return { userId, email, session: await encodeSession(userId, runtime.secrets.auth) };
  };

  const app: TestApp = {
    runtime,
    url: server.url,
    fetch: (request) => server.fetch(request),
    ws,
    createWorkspace: makeWorkspace,
    member,
    async request(method, path, opts = {}) {
      const headers = new Headers(opts.headers);
      if (opts.session) {
        headers.append('cookie', `next-auth.session-token=${opts.session}`);
        if (method !== 'GET' && method !== 'HEAD' && opts.origin !== null && !headers.has('origin')) {
          headers.set('origin', opts.origin ?? 'http://127.0.0.1:3000');
        }
      } else {
        const key = opts.key === undefined ? ws.apiKey : opts.key;
        if (key !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
      }
      let body: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
      if (opts.rawBody !== undefined) {
        body = opts.rawBody;
        if (typeof body === 'string') noteRequestBody(body);
      } else if (opts.body !== undefined) {
        noteRequestBody(opts.body);
        body = JSON.stringify(opts.body);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      }
      const response = await server.send(method, `/api/v1${path}`, headers, body);
      const text = await response.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      // Every response the suite sees must be one the OpenAPI document promises.
      const apiPath = path.split('?')[0]!;
      expect(
        checkAgainstDocument(method, apiPath, response.status, parsed, response.headers.get('content-type')),
        `${method} ${path} → ${response.status} ${text.slice(0, 300)}`,
      ).toEqual([]);
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      return { status: response.status, headers: response.headers, body: parsed as never, text };
    },
    async counts() {
      const [row] = await query<Record<string, number | string>>(
        runtime.db,
        sql`select
          (select count(*) from ledger_events) as events,
          (select count(*) from tasks) as tasks,
          (select count(*) from receipts) as receipts,
          (select count(*) from idempotency_records) as idempotency_records,
          (select count(*) from initiatives) as initiatives,
          (select count(*) from decisions) as decisions,
          (select count(*) from decision_attention) as attention,
          (select count(*) from runs) as runs,
          (select count(*) from run_checkpoints) as checkpoints,
          (select count(*) from dedup_claims) as claims,
          (select count(*) from imported_receipts) as imported_receipts,
          (select count(*) from webhook_endpoints) as webhook_endpoints,
          (select count(*) from webhook_deliveries) as webhook_deliveries,
          (select count(*) from artifacts) as artifacts,
          (select count(*) from artifact_contents) as artifact_contents,
          (select count(*) from ledger_witnesses) as witnesses,
          (select count(*) from ledger_cosignatures) as cosignatures,
          (select count(*) from mcp_servers) as mcp_servers`,
      );
      return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, Number(v)]));
    },
    async expectUnchanged(action) {
      const before = await app.counts();
      await action();
      expect(await app.counts()).toEqual(before);
    },
    async close() {
      await server.close();
      await runtime.close();
    },
  };
  return app;
}
