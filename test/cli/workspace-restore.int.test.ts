/**
 * The restore drill (docs/operators.md, "Production": rehearsing a restore), on the run's engine: a busy
 * workspace (work, initiatives, runs, decisions with rulings, receipts, imports, claims, members,
 * keys) is exported as a bundle, and `npm run workspace:restore`, run as a process, rebuilds it on
 * a fresh database. Then every projection row, the identity rows, the chain head and the API's
 * reads are compared with the original's. A tampered bundle writes nothing; a workspace already
 * there is refused, and so is an account there under a member's email and another id; an incremental export restores with the one it follows.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { asc, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query, type Executor } from '@/db';
import { apiKeys, invitations, memberships, users, workspaces } from '@/db/schema';
import { generateApiKey } from '@/server/auth/api-keys';
import { verifyPassword } from '@/server/auth/passwords';
import { NO_PASSWORD } from '@/server/domain/workspaces/restore';
import { parseEnv } from '@/server/env';
import { bundleFrame, bundleText, eventPages, type BundleHead } from '@/server/ledger/bundle';
import { readHead } from '@/server/ledger/read';
import { loadFromTables } from '@/server/projections/state';
import { createRuntime, type Runtime } from '@/server/runtime';
import { startTestApp, type TestApp } from '../support/app';
import { buildBusyWorkspace, type BusyWorkspace } from '../support/busy-workspace';
import { createTestRuntime, testEngine, type TestRuntime } from '../support/engine';
import { serveApi, type HttpServer } from '../support/http';
import { internalClient } from '../support/internal';

const run = promisify(execFile);

let source: TestApp;
let busy: BusyWorkspace;
let dir: string;
const targets: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aws-restore-'));
  source = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000', WEBHOOKS_ALLOW_PRIVATE: 'true' });
  busy = await buildBusyWorkspace(source);
  // What a restore cannot bring back as it was: a pending invitation (its token is not in the
  // ledger) and a webhook endpoint (nor is its signing secret).
  const invited = await internalClient(source.runtime).mutate(
    'members.invite',
    { workspace_id: busy.ws.workspaceId, email: 'pending@restore.test', role: 'viewer' },
    { session: busy.owner.session },
  );
  expect(invited.status, JSON.stringify(invited.body)).toBe(200);
  const hook = await source.request('POST', '/webhooks', { key: busy.ws.apiKey, body: { url: 'http://127.0.0.1:9/hook' } });
  expect(hook.status, hook.text).toBe(201);
}, 120_000);
afterAll(async () => {
  for (const t of targets) await t.close();
  await source?.close();
  rmSync(dir, { recursive: true, force: true });
});

const workspaceId = () => busy.ws.workspaceId;

/** The source workspace's ledger as a bundle file (what npm run ledger:export writes). */
async function exportBundle(name: string, opts: { after?: number; previous?: BundleHead } = {}): Promise<string> {
  const file = path.join(dir, name);
  const frame = await bundleFrame(source.runtime.db, workspaceId(), opts);
  await pipeline(Readable.from(bundleText(frame, eventPages(source.runtime.db, frame))), createWriteStream(file));
  return file;
}

/** A fresh, empty database of the run's engine: where the tool writes, and how to open it here. */
interface Target {
  env: Record<string, string>;
  /** This test's own connection (PGlite: only while no tool has the directory open). */
  open(): Promise<Runtime>;
  close(): Promise<void>;
}

async function freshTarget(): Promise<Target> {
  let target: Target;
  if (testEngine() === 'postgres') {
    const rt: TestRuntime = await createTestRuntime();
    target = { env: { DATABASE_URL: rt.databaseUrl! }, open: async () => rt, close: () => rt.close() };
  } else {
    const data = mkdtempSync(path.join(dir, 'pglite-'));
    let open: Runtime | null = null;
    target = {
      env: { PGLITE_DATA_DIR: data },
      async open() {
        open ??= await createRuntime(parseEnv({ NODE_ENV: 'test', PGLITE_DATA_DIR: data, SEED_DEMO: 'false' }));
        return open;
      },
      async close() {
        await open?.close();
        open = null;
      },
    };
  }
  targets.push(target);
  return target;
}

/** A tool, run as npm runs it (scripts/tool.mjs), against `target` (closed here first on PGlite). */
async function tool(target: Target, name: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  if (testEngine() === 'pglite') await target.close();
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join('scripts', 'tool.mjs'), name, ...args], {
      env: { ...process.env, ...target.env, LOG_LEVEL: 'silent', SEED_DEMO: 'false' },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The identity rows of the workspace: its row, members with their accounts, keys, invitations. */
async function identity(db: Executor, id: string) {
  return {
    workspace: await db.select().from(workspaces).where(eq(workspaces.id, id)),
    members: await db
      .select({
        userId: memberships.userId,
        role: memberships.role,
        since: memberships.createdAt,
        email: users.email,
        name: users.displayName,
      })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(eq(memberships.workspaceId, id))
      .orderBy(asc(memberships.userId)),
    keys: await db
      .select({ id: apiKeys.id, name: apiKeys.name, prefix: apiKeys.prefix, owner: apiKeys.ownerUserId, createdAt: apiKeys.createdAt })
      .from(apiKeys)
      .where(eq(apiKeys.workspaceId, id))
      .orderBy(asc(apiKeys.id)),
    invitations: await db
      .select({ id: invitations.id, email: invitations.email, role: invitations.role, acceptedBy: invitations.acceptedBy })
      .from(invitations)
      .where(eq(invitations.workspaceId, id))
      .orderBy(asc(invitations.id)),
  };
}

/** A key to read the restored workspace with, put straight into its table (no ledger event). */
async function readKey(db: Executor, id: string): Promise<string> {
  const [owner] = await db.select({ userId: memberships.userId }).from(memberships).where(eq(memberships.workspaceId, id)).limit(1);
  const key = generateApiKey();
  await db.insert(apiKeys).values({
    id: randomUUID(),
    workspaceId: id,
    ownerUserId: owner!.userId,
    name: 'drill reader',
    prefix: key.prefix,
    secretHash: key.hash,
  });
  return key.secret;
}

async function get(api: HttpServer, key: string, pathAndQuery: string): Promise<{ status: number; body: any }> {
  const res = await api.send('GET', `/api/v1${pathAndQuery}`, new Headers({ authorization: `Bearer ${key}` }));
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Every read of the API over the workspace: lists, then each item the lists name. */
async function reads(api: HttpServer, key: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const read = async (p: string) => {
    const res = await get(api, key, p);
    expect(res.status, `${p}: ${JSON.stringify(res.body)}`).toBe(200);
    // `data` is what was read; of `meta`, whether there is more (cursors are opaque).
    out[p] = { data: res.body.data ?? res.body, hasMore: res.body.meta?.hasMore };
    return res.body.data as Record<string, string>[];
  };
  // Each list, then each item it names (by the list's own id field).
  const lists: [string, string, string][] = [
    ['/tasks?limit=100', '/tasks/', 'id'],
    ['/initiatives?limit=100', '/initiatives/', 'id'],
    ['/decisions?limit=100', '/decisions/', 'id'],
    ['/runs?limit=100', '/runs/', 'runId'],
    ['/receipts?limit=100', '/receipts/', 'id'],
  ];
  for (const [list, item, idField] of lists) {
    const rows = await read(list);
    expect(rows.length, list).toBeGreaterThan(0);
    for (const row of rows) await read(`${item}${row[idField]}`);
  }
  await read('/tasks?ready=true&limit=100');
  await read('/decisions?status=pending&limit=100');
  await read('/operating-map');
  // The whole ledger, page by page (each server follows its own cursors).
  let cursor = '';
  for (let page = 0; ; page++) {
    const res = await get(api, key, `/events/stream?limit=100${cursor}`);
    expect(res.status).toBe(200);
    out[`/events/stream page ${page}`] = res.body.data;
    if (!res.body.meta.hasMore) break;
    cursor = `&cursor=${encodeURIComponent(res.body.meta.nextCursor)}`;
  }
  await read('/ledger/verify');
  // The workspace as the key sees it, but not the key itself (the reader is another key).
  const ws = await get(api, key, '/workspace');
  out['/workspace'] = { ...ws.body.data, api_key: undefined };
  return out;
}

describe('npm run workspace:restore', () => {
  let target: Target;
  let bundle: string;

  beforeAll(async () => {
    target = await freshTarget();
    bundle = await exportBundle('whole.json');
  });

  it('refuses a tampered bundle and writes nothing', async () => {
    const tampered = path.join(dir, 'tampered.json');
    const text = readFileSync(bundle, 'utf8');
    writeFileSync(tampered, text.replace('"title":"', '"title":"(changed) '));
    const result = await tool(target, 'workspace-restore', '--bundle', tampered);
    expect(result.code, result.stdout + result.stderr).toBe(3);
    expect(result.stderr).toContain('does not verify');
    const db = (await target.open()).db;
    expect(await db.select().from(workspaces).where(eq(workspaces.id, workspaceId()))).toEqual([]);
    expect(await query(db, sql`select 1 from ledger_events where workspace_id = ${workspaceId()}`)).toEqual([]);
  });

  it('rebuilds the workspace: every projection row, the identity rows, the chain head and every read the same', async () => {
    const result = await tool(target, 'workspace-restore', '--bundle', bundle);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`(${workspaceId()}): `);
    // It says what did not come back, and what to do.
    expect(result.stdout).toContain('npm run user:reset-password -- --email');
    expect(result.stdout).toMatch(/comes? back revoked/);
    // One of each, said in the singular.
    expect(result.stdout).toContain('1 pending invitation comes back revoked (invite again): pending@restore.test');
    expect(result.stdout).toContain('1 webhook endpoint was not restored (create them again): http://127.0.0.1:9'); // where it went: the ledger keeps no path

    const restored = await target.open();
    const src = source.runtime.db;
    expect(await readHead(restored.db, workspaceId())).toEqual(await readHead(src, workspaceId()));
    expect(await loadFromTables(restored.db, workspaceId())).toEqual(await loadFromTables(src, workspaceId()));
    expect(await identity(restored.db, workspaceId())).toEqual(await identity(src, workspaceId()));
    // Every key is revoked (its secret is not in the bundle), every member without a password.
    const keys = await restored.db.select({ revokedAt: apiKeys.revokedAt }).from(apiKeys).where(eq(apiKeys.workspaceId, workspaceId()));
    expect(keys.every((k) => k.revokedAt !== null)).toBe(true);
    const members = await restored.db.select({ hash: users.passwordHash }).from(users);
    expect(members.every((m) => m.hash === NO_PASSWORD)).toBe(true);
    const pending = await restored.db.select().from(invitations).where(eq(invitations.email, 'pending@restore.test'));
    expect(pending[0]!.revokedAt).not.toBeNull();
    expect(await verifyPassword(NO_PASSWORD, '')).toBe(false);

    // The API reads the same, through a new key; the old keys are refused.
    const reader = await readKey(restored.db, workspaceId());
    const [here, there] = [await serveApi(source.runtime), await serveApi(restored)];
    try {
      expect(await reads(there, reader)).toEqual(await reads(here, busy.ws.apiKey));
      expect((await get(there, busy.ws.apiKey, '/workspace')).status).toBe(401);
      // The restored chain goes on: a new write appends after its head, and it all verifies.
      const headers = new Headers({ authorization: `Bearer ${reader}`, 'content-type': 'application/json' });
      const write = await there.send('POST', '/api/v1/work', headers, JSON.stringify({ title: 'After the restore' }));
      expect(write.status, await write.clone().text()).toBe(201);
      const head = (await readHead(src, workspaceId()))!;
      expect((await readHead(restored.db, workspaceId()))!.sequence).toBe(head.sequence + 1);
      expect((await get(there, reader, '/ledger/verify')).body.data).toMatchObject({ verified: true, checkedEvents: head.sequence + 1 });
    } finally {
      await here.close();
      await there.close();
    }
  });

  it('refuses a workspace that is already there, and changes nothing', async () => {
    const before = await readHead((await target.open()).db, workspaceId());
    const result = await tool(target, 'workspace-restore', '--bundle', bundle);
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('is already on this database');
    expect(await readHead((await target.open()).db, workspaceId())).toEqual(before);
  });

  it('refuses an account already on the target under a member’s email and another id, and writes nothing', async () => {
    const other = await freshTarget();
    const [member] = (await identity(source.runtime.db, workspaceId())).members;
    const db = (await other.open()).db;
    const strangerId = randomUUID();
    await db.insert(users).values({ id: strangerId, email: member!.email, displayName: 'Someone else', passwordHash: NO_PASSWORD });
    const result = await tool(other, 'workspace-restore', '--bundle', bundle);
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain(`An account for ${member!.email} is already on this database under another id (${strangerId})`);
    const after = (await other.open()).db;
    expect(await after.select().from(workspaces).where(eq(workspaces.id, workspaceId()))).toEqual([]);
    expect(await query(after, sql`select 1 from ledger_events where workspace_id = ${workspaceId()}`)).toEqual([]);
    expect(await after.select({ id: users.id }).from(users)).toEqual([{ id: strangerId }]);
  });

  it('lets a member set a password again', async () => {
    const [member] = (await identity((await target.open()).db, workspaceId())).members;
    const result = await tool(target, 'user-reset-password', '--email', member!.email);
    expect(result.code, result.stderr).toBe(0);
    const password = result.stdout.split('\n')[1]!.trim();
    const [row] = await (await target.open()).db.select({ hash: users.passwordHash }).from(users).where(eq(users.id, member!.userId));
    expect(await verifyPassword(row!.hash, password)).toBe(true);
  });
});

describe('an incremental export', () => {
  it('restores with the earlier export it follows, to the same head', async () => {
    const first = await exportBundle('first.json');
    const head = (await readHead(source.runtime.db, workspaceId()))!;
    // More happens after the first export.
    for (let i = 0; i < 3; i++) {
      const res = await source.request('POST', '/work', { key: busy.ws.apiKey, body: { title: `After the export ${i}` } });
      expect(res.status, res.text).toBe(201);
    }
    const next = await exportBundle('next.json', { after: head.sequence, previous: { sequence: head.sequence, headHash: head.headHash } });

    const target = await freshTarget();
    const alone = await tool(target, 'workspace-restore', '--bundle', next);
    expect(alone.code).toBe(1);
    expect(alone.stderr).toContain('--previous');

    const result = await tool(target, 'workspace-restore', '--bundle', next, '--previous', first);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const restored = await target.open();
    expect(await readHead(restored.db, workspaceId())).toEqual(await readHead(source.runtime.db, workspaceId()));
    expect(await loadFromTables(restored.db, workspaceId())).toEqual(await loadFromTables(source.runtime.db, workspaceId()));
  });
});
