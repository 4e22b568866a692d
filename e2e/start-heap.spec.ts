/**
 * `npm start` (scripts/start.mjs) runs the server with a capped V8 old space, so a busy server's
 * RSS stays bounded (docs/contract.md §14): 256 MB by default, SERVER_HEAP_MB to change it. The test starts the
 * real launcher on a free port with an in-memory database and reads the server's command line.
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect, test } from '@playwright/test';

const root = path.resolve(import.meta.dirname, '..');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function serverFlags(extraEnv: Record<string, string>): Promise<string[]> {
  const port = await freePort();
  const launcher = spawn(process.execPath, [path.join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PGLITE_DATA_DIR: 'memory://',
      SEED_DEMO: 'false',
      LOG_LEVEL: 'warn',
      ...extraEnv,
    },
    stdio: 'ignore',
  });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline || launcher.exitCode !== null) throw new Error('npm start did not come up');
      await new Promise((r) => setTimeout(r, 250));
    }
    const child = execFileSync('pgrep', ['-P', String(launcher.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')[0]!;
    return readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0');
  } finally {
    const exited = new Promise((r) => launcher.once('exit', r));
    launcher.kill('SIGINT');
    await exited;
  }
}

test('npm start caps the server’s heap at 256 MB, or at SERVER_HEAP_MB', async () => {
  test.setTimeout(150_000);
  const flags = await serverFlags({});
  expect(flags).toContain('--max-old-space-size=256');
  // Under the cap, V8 would collect the whole heap each time it grew by 30 % (scripts/server-flags.mjs).
  expect(flags).toContain('--heap-growing-percent=100');
  expect(flags.some((f) => f.endsWith(path.join('scripts', 'serve.mjs')))).toBe(true);
  expect(await serverFlags({ SERVER_HEAP_MB: '384' })).toContain('--max-old-space-size=384');
  // An instance for waiters keeps its heap near what is live.
  const lean = await serverFlags({ SERVER_GC: 'lean' });
  expect(lean).toEqual(expect.arrayContaining(['--max-old-space-size=256', '--heap-growing-percent=20', '--max-semi-space-size=8']));
  const wrong = spawnSync(process.execPath, [path.join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    env: { ...process.env, SERVER_GC: 'fast' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(wrong.status).toBe(1);
  expect(wrong.stderr).toContain('Cannot start: SERVER_GC is throughput or lean, not fast.');
});

test('an instance that serves only agents never loads Next.js; the first page loads it, once', async () => {
  test.setTimeout(150_000);
  const port = await freePort();
  const launcher = spawn(process.execPath, [path.join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), PGLITE_DATA_DIR: 'memory://', SEED_DEMO: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The banner is on stdout, the log's JSON lines on stderr.
  let output = '';
  launcher.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  launcher.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const loads = () => output.split('\n').filter((line) => line.includes('"msg":"pages loaded"')).length;
  try {
    await expect.poll(() => output, { timeout: 60_000 }).toContain('Ready: open');
    for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${port}/api/v1/health`)).status).toBe(200);
    const mcp = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST' });
    expect(mcp.status).toBe(401);
    expect(loads()).toBe(0);
    for (let i = 0; i < 2; i++) {
      const page = await fetch(`http://127.0.0.1:${port}/signin`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<html');
    }
    expect(loads()).toBe(1);
  } finally {
    const exited = new Promise((r) => launcher.once('exit', r));
    launcher.kill('SIGINT');
    await exited;
  }
});
