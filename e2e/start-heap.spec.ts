/**
 * `npm start` (scripts/start.mjs) runs the server with a capped V8 old space, so a busy server's
 * RSS stays bounded (docs/contract.md §14): 256 MB by default, SERVER_HEAP_MB to change it. The test starts the
 * real launcher on a free port with an in-memory database and reads the server's command line.
 */
import { spawn, execFileSync } from 'node:child_process';
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
});
