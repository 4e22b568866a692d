/**
 * npm run ledger:witness, run as a process against the served API: it pins the log key, checks
 * each new checkpoint extends the last one it kept, cosigns it (served with the checkpoint from
 * then on), and exits 3, saying which sizes and roots disagree, when a database superuser cuts off
 * events, rebuilds the tree and writes on (a fork), or when the log signs with another key. Until an
 * owner names it, its cosignature is refused, and it prints the very request that names it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigningSettings } from '@/server/keys/workspace-keys';
import { addSigningKey } from '@/server/ledger/checkpoints';
import { witnessVkey } from '@/server/ledger/witness';
import { startTestApp, type TestApp, type TestWorkspace } from '../support/app';
import { integrate, nameWitness, signingSettings, writeWork } from '../support/ledger-tree';

const run = promisify(execFile);
let app: TestApp;
let settings: SigningSettings;
let dir: string;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_API_PER_MIN: '100000' });
  settings = signingSettings(app);
  dir = mkdtempSync(path.join(os.tmpdir(), 'aws-witness-'));
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function witness(ws: TestWorkspace, state: string, ...extra: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = [path.join('scripts', 'tool.mjs'), 'ledger-witness', '--url', `${app.url}/api/v1`, '--state', state, '--once', ...extra];
  try {
    // The key in the environment, never on the command line.
    const { stdout, stderr } = await run(process.execPath, args, { timeout: 60_000, env: { ...process.env, AWS_API_KEY: ws.apiKey } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/**
 * A witness's first round, refused as not named (exit 1, the checkpoint kept), and its naming by
 * the workspace's key with the key the state file keeps: the next rounds cosign.
 */
async function firstRoundNamed(ws: TestWorkspace, state: string): Promise<void> {
  const first = await witness(ws, state);
  expect(first.code, first.stdout + first.stderr).toBe(1);
  expect(first.stderr).toContain('NOT NAMED');
  await nameWitness(app, ws, witnessVkey(JSON.parse(readFileSync(state, 'utf8'))));
}

/** What an operator with the database can do: cut the newest `n` events, fix the head, and rebuild the tree. */
async function cutAndRebuild(ws: TestWorkspace, n: number): Promise<void> {
  await app.runtime.db.transaction(async (tx) => {
    await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
    await tx.execute(sql`alter table ledger_heads disable trigger ledger_heads_forward_only`);
    await tx.execute(
      sql`delete from ledger_events where workspace_id = ${ws.workspaceId}
            and sequence > (select sequence from ledger_heads where workspace_id = ${ws.workspaceId}) - ${n}`,
    );
    await tx.execute(
      sql`update ledger_heads h set sequence = e.sequence, head_hash = e.event_hash
            from (select sequence, event_hash from ledger_events where workspace_id = ${ws.workspaceId} order by sequence desc limit 1) e
           where h.workspace_id = ${ws.workspaceId}`,
    );
    await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
    await tx.execute(sql`alter table ledger_heads enable trigger ledger_heads_forward_only`);
    await tx.execute(sql`delete from ledger_tree_tiles where workspace_id = ${ws.workspaceId}`);
    await tx.execute(sql`delete from ledger_trees where workspace_id = ${ws.workspaceId}`);
  });
}

describe('npm run ledger:witness', () => {
  it('pins the key, checks consistency, cosigns; a fork of the log exits 3 naming the sizes and roots', async () => {
    const ws = await app.createWorkspace();
    const state = path.join(dir, 'fork.json');
    await writeWork(app, ws, 3);
    await integrate(app, ws);
    // The newcomer's path: refused as not named, the exact request to name it printed, run as printed.
    const refused = await witness(ws, state);
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    const vkey = witnessVkey(JSON.parse(readFileSync(state, 'utf8')));
    expect(refused.stderr).toContain(
      `NOT NAMED: the workspace keeps cosignatures only from the witnesses its owners name, and not yet from ${vkey}.`,
    );
    expect((await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data.cosignatures).toEqual([]);
    const curl = /^ {2}(curl .*)$/m.exec(refused.stderr)![1]!;
    const named = await run('sh', ['-c', curl], { env: { ...process.env, OWNER_KEY: ws.apiKey } });
    expect(JSON.parse(named.stdout).data).toMatchObject({ vkey, name: vkey.split('+')[0] });
    const first = await witness(ws, state);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^OK size \d+ root \S+ \(consistent with size \d+\); cosigned as witness\.\S+\+[0-9a-f]{8}\+\S+$/m);
    expect(first.stdout).toContain(vkey);
    const kept = JSON.parse(readFileSync(state, 'utf8'));
    const keys = await app.request('GET', '/ledger/keys', { key: ws.apiKey });
    expect(kept.logVkey).toBe(keys.body.data[0].vkey);
    const served = (await app.request('GET', '/ledger/checkpoint', { key: ws.apiKey })).body.data;
    expect(served.cosignatures).toHaveLength(1);
    expect(served.tree_size).toBe(kept.checkpoint.size);

    await writeWork(app, ws, 2);
    await integrate(app, ws);
    const second = await witness(ws, state);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain(`consistent with size ${kept.checkpoint.size}`);
    const seen = JSON.parse(readFileSync(state, 'utf8')).checkpoint as { size: number; root: string };

    // The fork: cut two events, rebuild the tree, write on past the size the witness saw.
    await cutAndRebuild(ws, 2);
    await writeWork(app, ws, 4);
    await integrate(app, ws);
    const forked = await witness(ws, state);
    expect(forked.code, forked.stdout + forked.stderr).toBe(3);
    expect(forked.stderr).toContain(`does not extend the one of size ${seen.size} (root ${seen.root})`);
    // The state still holds what the witness last found consistent.
    expect(JSON.parse(readFileSync(state, 'utf8')).checkpoint).toMatchObject(seen);
  });

  it('exits 3 for a smaller tree than it saw, and for a checkpoint signed with another key', async () => {
    const ws = await app.createWorkspace();
    const state = path.join(dir, 'smaller.json');
    await writeWork(app, ws, 4);
    await integrate(app, ws);
    await firstRoundNamed(ws, state);
    expect((await witness(ws, state)).code).toBe(0);
    const seen = JSON.parse(readFileSync(state, 'utf8')).checkpoint as { size: number; root: string };
    await cutAndRebuild(ws, 3);
    await integrate(app, ws);
    const smaller = await witness(ws, state);
    expect(smaller.code).toBe(3);
    expect(smaller.stderr).toMatch(
      new RegExp(
        `signed size \\d+ \\(root \\S+\\) after size ${seen.size} \\(root ${seen.root.replace(/[+/]/g, '\\$&')}\\): a smaller tree`,
      ),
    );

    const other = await app.createWorkspace();
    const otherState = path.join(dir, 'rotated.json');
    await writeWork(app, other, 1);
    await integrate(app, other);
    await firstRoundNamed(other, otherState);
    expect((await witness(other, otherState)).code).toBe(0);
    await app.runtime.db.transaction((tx) => addSigningKey(tx, other.workspaceId, settings));
    await integrate(app, other);
    const rotated = await witness(other, otherState);
    expect(rotated.code).toBe(3);
    expect(rotated.stderr).toMatch(/is not signed by the pinned key/);
    // Pinning the announced key goes on.
    const vkey = (await app.request('GET', '/ledger/keys', { key: other.apiKey })).body.data.find(
      (k: { retired_at: string | null }) => !k.retired_at,
    ).vkey;
    expect((await witness(other, otherState, '--vkey', vkey)).code).toBe(0);
  });

  it('exits 1 when the service cannot be reached, and 2 on wrong usage', async () => {
    const ws = await app.createWorkspace();
    const down = await witness({ ...ws }, path.join(dir, 'down.json'), '--url', 'http://127.0.0.1:9/api/v1');
    expect(down.code).toBe(1);
    const bad = await witness(ws, path.join(dir, 'bad.json'), '--interval', '0');
    expect(bad.code).toBe(2);
  });

  it('stops reading an answer past 1 MiB, and exits 1 saying so', async () => {
    const ws = await app.createWorkspace();
    // A log that answers the checkpoint with a body that never ends.
    let sent = 0;
    const endless = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const more = () => {
        while (sent < 64 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
      };
      res.on('drain', more);
      res.write('{"data":');
      more();
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = endless.address() as AddressInfo;
      const answer = await witness(ws, path.join(dir, 'endless.json'), '--url', `http://127.0.0.1:${port}/api/v1`);
      expect(answer.code).toBe(1);
      expect(answer.stderr).toContain('the answer is over 1 MiB');
      expect(sent).toBeLessThan(16 * 1024 * 1024);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });
});
