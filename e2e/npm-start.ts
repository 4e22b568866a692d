/**
 * `npm start` as a newcomer runs it, for the specs that need the real launcher: on an empty
 * embedded database, APP_URL left to its default, the banner read for what it printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { expect, type Browser } from '@playwright/test';

const root = path.resolve(import.meta.dirname, '..');

export interface Started {
  npm: ChildProcess;
  port: number;
  output: () => string;
  /** What the banner printed. */
  url: string;
  /** The one-time setup link, when the demo was not seeded and nobody has an account. */
  setupLink: string;
  apiKey: string;
  workspaceId: string;
  owner: { email: string; password: string };
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * `npm start` in a process group of its own (so a test can send the terminal's Ctrl-C to all of it).
 * `env` adds settings (SEED_DEMO=false, a DATABASE_URL) to the newcomer's empty environment.
 */
export async function npmStart(dataDir: string, port?: number, env: Record<string, string> = {}): Promise<Started> {
  port ??= await freePort();
  const npm = spawn('npm', ['start'], {
    cwd: root,
    detached: true,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), PGLITE_DATA_DIR: dataDir, LOG_LEVEL: 'warn', APP_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  npm.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const deadline = Date.now() + 90_000;
  while (!/Ready: open (\S+)/.test(out)) {
    if (Date.now() > deadline || npm.exitCode !== null) throw new Error(`npm start did not come up:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const find = (re: RegExp) => out.match(re)?.[1] ?? '';
  return {
    npm,
    port,
    output: () => out,
    url: find(/Ready: open (\S+)/),
    setupLink: find(/(https?:\/\/\S+\/setup\?token=\S+)/),
    apiKey: find(/API key\s+(awk_\S+)/),
    workspaceId: find(/workspace\s+\S+ \(([0-9a-f-]{36})\)/),
    owner: { email: find(/as (\S+@\S+) \//), password: find(/as \S+@\S+ \/ (\S+)/) },
    exited,
  };
}

/** A browser context signed in as the demo owner at `origin` (one of the addresses the app answers on). */
export async function signInAt(browser: Browser, origin: string, s: Started) {
  const context = await browser.newContext({ baseURL: origin });
  const page = await context.newPage();
  await page.goto('/signin');
  await page.getByLabel('Email').fill(s.owner.email);
  await page.getByLabel('Password').fill(s.owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(`${origin}/decisions`);
  return { context, page };
}

/** Stops a started service (the whole group) and waits for it. */
export async function stopStarted(s: Started | undefined): Promise<void> {
  if (!s || s.npm.exitCode !== null || s.npm.signalCode !== null) return;
  process.kill(-s.npm.pid!, 'SIGKILL');
  await s.exited;
}
