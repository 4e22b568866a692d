/**
 * Tampering by whoever owns the database, caught: the service on a real PostgreSQL
 * database, and its superuser cutting the newest events and fixing the head row. The chain's own
 * links still hold; `npm run ledger:verify` (a process) and the page's "Verify the chain" say
 * BROKEN against the signed checkpoint. Then the operator rebuilds the tree and writes on (a
 * fork the database alone now agrees with): a witness that kept an earlier checkpoint exits 3. The
 * witness is named by the owner first: the workspace keeps only named witnesses' cosignatures.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import postgres from 'postgres';
import { npmStart, signInAt, stopStarted, type Started } from './npm-start';

const root = path.join(import.meta.dirname, '..');
// Set by e2e/global-setup.ts: the machine's server, or an embedded one started for the run.
const admin = process.env.TEST_DATABASE_URL!;
const name = `aws_e2e_tamper_${Date.now()}`;
let databaseUrl = '';
let dir = '';
let service: Started | undefined;

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(180_000);
  const sql = postgres(admin, { max: 1, onnotice: () => undefined });
  await sql.unsafe(`create database ${name}`);
  await sql.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  databaseUrl = url.toString();
  dir = mkdtempSync(path.join(os.tmpdir(), 'aws-tamper-'));
  service = await npmStart(path.join(dir, 'pglite'), undefined, { DATABASE_URL: databaseUrl, CHECKPOINT_INTERVAL_MS: '200' });
});

test.afterAll(async () => {
  await stopStarted(service);
  rmSync(dir, { recursive: true, force: true });
  const sql = postgres(admin, { max: 1, onnotice: () => undefined });
  await sql.unsafe(`drop database if exists ${name} with (force)`);
  await sql.end();
});

/** The REST API with the demo key. */
async function api(method: 'GET' | 'POST', route: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${service!.port}/api/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${service!.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as { data: Record<string, unknown> } };
}

async function writeWork(n: number, label: string): Promise<void> {
  for (let i = 0; i < n; i++) expect((await api('POST', '/work', { title: `${label} ${i}` })).status).toBe(201);
}

/** The head, once the newest checkpoint covers it (the integrator signs within CHECKPOINT_INTERVAL_MS). */
async function signedHead(): Promise<{ size: number; root: string }> {
  const head = (await api('GET', '/ledger/verify')).body.data.head as { sequence: number };
  let checkpoint: Record<string, unknown> = {};
  // 404 until the integrator has signed the workspace's first checkpoint (a service just started).
  await expect
    .poll(async () => ((checkpoint = (await api('GET', '/ledger/checkpoint')).body.data ?? {}), (checkpoint.tree_size as number) ?? 0), {
      timeout: 20_000,
    })
    .toBeGreaterThanOrEqual(head.sequence);
  return { size: checkpoint.tree_size as number, root: checkpoint.root_hash as string };
}

/** A tool as a process, on the service's database. */
function tool(name: string, ...args: string[]) {
  const run = spawnSync(process.execPath, ['scripts/tool.mjs', name, ...args], {
    cwd: root,
    encoding: 'utf8',
    // The witness's key in the environment, as a user gives it (never on the command line).
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', AWS_API_KEY: service!.apiKey },
    timeout: 60_000,
  });
  return { status: run.status, out: run.stdout + run.stderr };
}

/** The superuser keeps the first `keep` events of the workspace and moves its head back to match. */
async function cutTo(keep: number): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe('alter table ledger_events disable trigger ledger_events_append_only');
      await tx.unsafe('alter table ledger_heads disable trigger ledger_heads_forward_only');
      await tx`delete from ledger_events where workspace_id = ${service!.workspaceId} and sequence > ${keep}`;
      await tx`update ledger_heads set sequence = ${keep},
                 head_hash = (select event_hash from ledger_events where workspace_id = ${service!.workspaceId} and sequence = ${keep})
               where workspace_id = ${service!.workspaceId}`;
      await tx.unsafe('alter table ledger_events enable trigger ledger_events_append_only');
      await tx.unsafe('alter table ledger_heads enable trigger ledger_heads_forward_only');
    });
  } finally {
    await sql.end();
  }
}

const witnessState = () => path.join(dir, 'witness.json');
const witness = () =>
  tool(
    'ledger-witness',
    '--url',
    `http://127.0.0.1:${service!.port}/api/v1`,
    '--state',
    witnessState(),
    '--name',
    'witness.e2e.test',
    '--once',
  );

test('cutting the newest events and fixing the head row: ledger:verify and the page say BROKEN', async ({ browser }) => {
  test.setTimeout(120_000);
  await writeWork(6, 'before the cut');
  // A witness's first round: the workspace keeps only named witnesses' cosignatures, so it says
  // what an owner sends to name it; the owner (the demo key) does.
  const unnamed = witness();
  expect(unnamed.status, unnamed.out).toBe(1);
  const vkey = /NOT NAMED: .* not yet from (\S+)\.$/m.exec(unnamed.out)?.[1];
  expect(vkey, unnamed.out).toMatch(/^witness\.e2e\.test\+[0-9a-f]{8}\+/);
  expect((await api('POST', '/ledger/witnesses', { vkey })).status).toBe(201);
  const signed = await signedHead();
  // A witness keeps this checkpoint (and cosigns it) before anything is touched.
  const first = witness();
  expect(first.status, first.out).toBe(0);
  expect(tool('ledger-verify', '--workspace', 'demo').status).toBe(0);
  // The page says which witness vouched for which size, and when.
  const { page, context } = await signInAt(browser, `http://127.0.0.1:${service!.port}`, service!);
  await page.goto('/ledger');
  const panel = page.getByRole('region', { name: 'Signed checkpoints and witnesses' });
  await expect(panel).toContainText(`The log signed its tree of ${signed.size} events`);
  const row = panel.getByRole('table', { name: /largest tree/ }).getByRole('row', { name: /witness\.e2e\.test/ });
  await expect(row).toContainText(`${signed.size} events (the newest checkpoint)`);
  await expect(row.getByRole('cell').nth(2)).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  // And which witnesses the owners named, with their keys: only theirs count.
  await expect(panel.getByRole('table', { name: /Named witnesses/ }).getByRole('row', { name: /witness\.e2e\.test/ })).toContainText(vkey!);

  await cutTo(signed.size - 3);
  const verify = tool('ledger-verify', '--workspace', 'demo');
  expect(verify.status, verify.out).toBe(3);
  expect(verify.out).toContain(`BROKEN at sequence ${signed.size - 2}: checkpoint_beyond_head`);
  expect(verify.out).toContain(`"actual": "the chain ends at ${signed.size - 3}"`);

  await page.goto('/ledger');
  await page.getByRole('button', { name: 'Verify the chain' }).click();
  await expect(page.getByRole('status')).toContainText(
    `The chain breaks at event ${signed.size - 2}: the chain ends before the size the log signed: events were cut (checkpoint_beyond_head)`,
  );
  await context.close();
});

test('rebuilding the tree over a fork and writing on: the database agrees with itself, the witness exits 3', async () => {
  test.setTimeout(120_000);
  const kept = (await api('GET', '/ledger/checkpoint')).body.data as { tree_size: number; root_hash: string };
  // Other events where the cut ones were; the integrator stops on alarm, signing nothing.
  await writeWork(5, 'after the cut');
  const rebuilt = tool('projections-rebuild', '--workspace', 'demo');
  expect(rebuilt.status, rebuilt.out).toBe(0);
  expect(rebuilt.out).toMatch(/the Merkle tree is rebuilt from \d+ events \(it held \d+\); its alarm is cleared/);
  const forked = await signedHead();
  expect(forked.size).toBeGreaterThan(kept.tree_size);
  // The database alone now agrees with itself: the log re-signed its new history.
  expect(tool('ledger-verify', '--workspace', 'demo').status).toBe(0);

  const caught = witness();
  expect(caught.status, caught.out).toBe(3);
  expect(caught.out).toContain(
    `the tree of size ${forked.size} (root ${forked.root}) does not extend the one of size ${kept.tree_size} (root ${kept.root_hash})`,
  );
});
