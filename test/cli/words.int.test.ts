/**
 * The tools count in words: one event is "1 event", one workspace "1 workspace" (never "1 events"
 * or "workspace(s)"). Run as a user runs them, against a database of the run's engine.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readHead } from '@/server/ledger/read';
import { seedDemoIfEmpty } from '@/server/domain/workspaces/seed-demo';
import { toolDatabase, type ToolDatabase } from '../support/tool-database';

const run = promisify(execFile);
let db: ToolDatabase;
let head = 0;

async function tool(name: string, ...args: string[]) {
  const { stdout, stderr } = await run(process.execPath, [path.join('scripts', 'tool.mjs'), name, ...args], {
    env: { ...process.env, ...db.env, LOG_LEVEL: 'silent' },
    timeout: 60_000,
  });
  return { stdout, stderr };
}

beforeAll(async () => {
  db = await toolDatabase('words');
  head = await db.withDb(async (rt) => {
    const demo = (await seedDemoIfEmpty(rt.db))!;
    return (await readHead(rt.db, demo.workspaceId))!.sequence;
  });
});
afterAll(async () => {
  await db?.close();
});

it('ledger:export and ledger:verify say "1 event" for a bundle of one event', async () => {
  const file = path.join(db.dir, 'last.json');
  const exported = await tool('ledger-export', '--workspace', 'demo', '--from', String(head), '--out', file);
  expect(exported.stderr).toContain(`Wrote 1 event (${head}–${head}) of demo`);
  const verified = await tool('ledger-verify', '--bundle', file);
  expect(verified.stdout).toMatch(/^OK: 1 event verified, head /m);
});

it('projections:rebuild says "1 workspace"', async () => {
  const rebuilt = await tool('projections-rebuild', '--workspace', 'demo');
  expect(rebuilt.stdout).toMatch(/^Rebuilt 1 workspace in /m);
});
