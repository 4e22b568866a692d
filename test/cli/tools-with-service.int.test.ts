/**
 * The command-line tools while a service holds the database, run as processes as npm runs them.
 * On PGlite, whose directory one process may open, they run in the service through its local
 * socket (scripts/tool-socket.ts); on PostgreSQL they open the database themselves. Either way
 * workspace:create and ledger:verify do what they do alone: the same output and exit status, and
 * the key printed works against the service's API.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '@/db';
import { parseEnv } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';
import { seedDemoIfEmpty } from '@/server/domain/workspaces/seed-demo';
import type { LoadedTool } from '../../scripts/db-tool';
import { serveTools } from '../../scripts/tool-service';
import { toolSocketPath } from '../../scripts/tool-socket';
import { createTestRuntime, testEngine } from '../support/engine';
import { callApi } from '../support/http';

const run = promisify(execFile);

let dir: string | undefined;
let runtime: Runtime;
let childEnv: Record<string, string>;
let service: { close(): Promise<void> } | null = null;

/** The tools of scripts/, loaded as the service loads them (here without bundling: vitest reads TypeScript). */
const load = async (name: string) => (await import(`../../scripts/${name}.ts`)).default as LoadedTool;

beforeAll(async () => {
  if (testEngine() === 'postgres') {
    const rt = await createTestRuntime();
    runtime = rt;
    childEnv = { DATABASE_URL: rt.databaseUrl! };
  } else {
    dir = mkdtempSync(path.join(os.tmpdir(), 'aws-tools-service-'));
    childEnv = { PGLITE_DATA_DIR: path.join(dir, 'pglite') };
    runtime = await createRuntime(parseEnv({ NODE_ENV: 'test', PGLITE_DATA_DIR: childEnv.PGLITE_DATA_DIR, SEED_DEMO: 'false' }));
    service = await serveTools(runtime, load);
  }
  await seedDemoIfEmpty(runtime.db);
});
afterAll(async () => {
  await service?.close();
  await runtime?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function tool(name: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join('scripts', 'tool.mjs'), name, ...args], {
      env: { ...process.env, ...childEnv, LOG_LEVEL: 'silent' },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the tools while the service holds the database', () => {
  it('workspace:create creates the workspace and prints a key that works against the service', async () => {
    const made = await tool('workspace-create', '--name', 'Beside the service', '--owner-email', 'bea@beside.test', '--with-key');
    expect(made.code, made.stderr).toBe(0);
    const key = /API key\s+(awk_[A-Za-z0-9_-]{43})/.exec(made.stdout)?.[1];
    const workspaceId = /workspace\s+([0-9a-f-]{36})/.exec(made.stdout)?.[1];
    expect(key && workspaceId, made.stdout).toBeTruthy();
    expect(made.stdout).toMatch(/owner\s+bea@beside\.test\s+password \S{20}/);
    const res = await callApi(runtime, new Request('http://127.0.0.1/api/v1/workspace', { headers: { authorization: `Bearer ${key}` } }));
    expect(res.status).toBe(200);
    expect(res.json().data).toMatchObject({ id: workspaceId, name: 'Beside the service' });
    // The same name again: the domain's refusal, its message and status 1, as when run alone.
    const taken = await tool('workspace-create', '--name', 'beside the service', '--owner-email', 'x@beside.test');
    expect([taken.code, taken.stderr.trim()]).toEqual([1, 'A workspace named "Beside the service" already exists. Choose another name.']);
  });

  it('ledger:verify recomputes the chain: its report and line, 0 when it holds, 3 naming the first broken link', async () => {
    const made = await tool('workspace-create', '--name', 'Verified beside', '--owner-email', 'vera@beside.test');
    expect(made.code, made.stderr).toBe(0);
    const ok = await tool('ledger-verify', '--workspace', 'verified beside');
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^\{\n[^]*\n\}\nOK: 5 events verified, head 5 sha256:[0-9a-f]{64}/);
    const json = await tool('ledger-verify', '--workspace', 'verified beside', '--json', '--progress');
    expect(JSON.parse(json.stdout)).toMatchObject({ workspace: 'Verified beside', verified: true, checkedEvents: 5 });
    expect(json.stderr).toMatch(/^verified 5 of 5 events \(100 %\), [0-9,]+ events\/s\nOK: 5 events verified/);

    const workspaceId = JSON.parse(json.stdout).workspaceId as string;
    await runtime.db.transaction(async (tx) => {
      await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
      await tx.execute(sql`update ledger_events set actor_id = 'forged' where workspace_id = ${workspaceId} and sequence = 2`);
      await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    });
    const broken = await tool('ledger-verify', '--workspace', workspaceId);
    expect(broken.code).toBe(3);
    expect(broken.stdout).toContain('BROKEN at sequence 2: event_hash_mismatch');
  });

  it('a tool’s refusal keeps its message and status (1), and wrong usage is still refused before the database (2)', async () => {
    const unknown = await tool('key-create', '--workspace', 'no-such-workspace');
    expect([unknown.code, unknown.stderr.trim()]).toEqual([1, 'No workspace with id or name "no-such-workspace".']);
    const usage = await tool('user-add', '--workspace', 'demo', '--email', 'a@b.c', '--role', 'admin');
    expect([usage.code, usage.stderr.split('\n')[0]]).toEqual([2, 'npm run user:add: --role is one of owner, approver, viewer']);
  });

  it('ledger:export writes the bundle to stdout, whole', async () => {
    const exported = await tool('ledger-export', '--workspace', 'demo');
    expect(exported.code, exported.stderr).toBe(0);
    const bundle = JSON.parse(exported.stdout);
    const [head] = await query<{ sequence: number }>(
      runtime.db,
      sql`select h.sequence from ledger_heads h join workspaces w on w.id = h.workspace_id where w.name = 'demo'`,
    );
    expect(bundle.head.sequence).toBe(Number(head!.sequence));
    expect(bundle.events).toHaveLength(Number(head!.sequence));
  });

  if (testEngine() === 'pglite') {
    it('cuts a connection whose request runs past 1 MiB without ending its line, and serves the next tool', async () => {
      const conn = net.createConnection(toolSocketPath(childEnv.PGLITE_DATA_DIR!)!);
      conn.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => conn.on('close', () => resolve()));
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      for (let i = 0; i < 32 && !conn.destroyed; i++) await new Promise<void>((resolve) => conn.write(chunk, () => resolve()));
      await closed;
      const verify = await tool('ledger-verify', '--workspace', 'demo');
      expect(verify.code).toBe(0);
    });

    it('listens on a socket only its user can open, and once it has stopped a tool says what to do', async () => {
      const socket = toolSocketPath(childEnv.PGLITE_DATA_DIR!)!;
      expect(statSync(socket).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(socket)).mode & 0o777).toBe(0o700);
      await service!.close();
      service = null;
      expect(existsSync(socket)).toBe(false);
      // The database is still held (by this process): the tool cannot run, and says what to do.
      const refused = await tool('key-create', '--workspace', 'demo');
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain('is in use by another process');
      expect(refused.stderr).toContain('stop the server (Ctrl-C where `npm start` runs)');
    });
  }
});
