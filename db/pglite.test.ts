/**
 * The embedded engine's data directory is its owner's only: it holds every row, and other users
 * of the machine could otherwise read the password hashes and the ledger's encrypted keys.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { openPglite } from './pglite';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const scratch = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-pglite-mode-'));
  dirs.push(dir);
  return dir;
};
const modeOf = (dir: string) => statSync(dir).mode & 0o777;
const migrations = path.join(import.meta.dirname, '..', 'drizzle');

it('creates the data directory readable by its owner only, and tightens one made readable by others', { timeout: 60_000 }, async () => {
  const fresh = path.join(scratch(), 'data', 'pglite');
  const opened = await openPglite({ dataDir: fresh }, migrations);
  await opened.close();
  expect(modeOf(fresh)).toBe(0o700);
  expect(modeOf(path.dirname(fresh))).toBe(0o700);

  const earlier = path.join(scratch(), 'pglite');
  mkdirSync(earlier);
  chmodSync(earlier, 0o755);
  const reopened = await openPglite({ dataDir: earlier }, migrations);
  await reopened.close();
  expect(modeOf(earlier)).toBe(0o700);
});
