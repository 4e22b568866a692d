/**
 * A newcomer's command-line tools while `npm start` runs on the embedded database, whose directory
 * one process may open: `npm run ledger:verify` and `npm run workspace:create` run in the service
 * through its local socket (scripts/tool-socket.ts) and do what they do alone; the key printed
 * works against the running API. Once the service has stopped (Ctrl-C) the socket is gone and the
 * tools open the database themselves.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { npmStart, stopStarted, type Started } from './npm-start';

const root = path.resolve(import.meta.dirname, '..');

/** `npm run <script> -- <args>` as a newcomer types it, on the service's data directory. */
function npmRun(dataDir: string, script: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['run', script, '--', ...args], {
    cwd: root,
    env: { ...process.env, PGLITE_DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

test.describe.configure({ mode: 'serial' });
test.setTimeout(180_000);

test.describe('the tools while npm start serves the embedded database', () => {
  let dir: string;
  let dataDir: string;
  let s: Started | undefined;
  test.beforeAll(async () => {
    test.setTimeout(180_000);
    dir = mkdtempSync(path.join(os.tmpdir(), 'aws-npm-tools-'));
    dataDir = path.join(dir, 'pglite');
    s = await npmStart(dataDir);
  });
  test.afterAll(async () => {
    await stopStarted(s);
    rmSync(dir, { recursive: true, force: true });
  });

  test('ledger:verify verifies the demo workspace’s chain', async () => {
    const verified = await npmRun(dataDir, 'ledger:verify', '--workspace', 'demo');
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/"workspaceId": "[0-9a-f-]{36}"/);
    expect(verified.stdout).toMatch(/^OK: \d+ events verified, head \d+ sha256:[0-9a-f]{64}/m);
    expect(verified.stdout).toContain(`"workspaceId": "${s!.workspaceId}"`);
  });

  test('workspace:create creates a workspace whose printed key works against the running API', async () => {
    const made = await npmRun(dataDir, 'workspace:create', '--name', 'Newcomer', '--owner-email', 'new@newcomer.test', '--with-key');
    expect(made.code, made.stderr).toBe(0);
    const key = /API key\s+(awk_[A-Za-z0-9_-]{43})/.exec(made.stdout)?.[1];
    const workspaceId = /workspace\s+([0-9a-f-]{36})/.exec(made.stdout)?.[1];
    expect(key && workspaceId, made.stdout).toBeTruthy();
    const res = await fetch(`http://127.0.0.1:${s!.port}/api/v1/workspace`, { headers: { Authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect((await res.json()).data).toMatchObject({ id: workspaceId, name: 'Newcomer' });
    // Work made with it is in the ledger the next verification reads.
    const work = await fetch(`http://127.0.0.1:${s!.port}/api/v1/work`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 'First task of the new workspace' }),
    });
    expect(work.status).toBe(201);
    const verified = await npmRun(dataDir, 'ledger:verify', '--workspace', 'Newcomer', '--json');
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout.slice(verified.stdout.indexOf('{')))).toMatchObject({ workspaceId, verified: true });
  });

  test('after Ctrl-C the socket is gone and the tools open the database themselves', async () => {
    const socket = `${dataDir}.tools/tools.sock`;
    expect(existsSync(socket)).toBe(true);
    process.kill(-s!.npm.pid!, 'SIGINT');
    expect((await s!.exited).code).toBe(0);
    expect(existsSync(socket)).toBe(false);
    const verified = await npmRun(dataDir, 'ledger:verify', '--workspace', 'newcomer');
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^OK: \d+ events verified/m);
  });
});
