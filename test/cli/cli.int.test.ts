/**
 * The command-line tools and the first-start seed, run as a user runs them: as processes against
 * a database of the run's engine (a PGlite directory, or a PostgreSQL database).
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { query } from '@/db';
import { callApi, serveApi } from '../support/http';
import { verifyPassword } from '@/server/auth/passwords';
import { createInitiativeTree } from '@/server/domain/initiatives/create-initiative';
import { createWork } from '@/server/domain/work/create-work';
import { registerArtifact } from '@/server/domain/artifacts/artifacts';
import { readCatalog } from '@/server/domain/artifact-types/catalog';
import { loadFromTables } from '@/server/projections/state';
import { cliActor, findWorkspace } from '../../scripts/cli';
import { seedDemoIfEmpty, type DemoWorkspace } from '@/server/domain/workspaces/seed-demo';
import { parseEnv } from '@/server/env';
import { createRuntime, type Runtime } from '@/server/runtime';
import { createTestRuntime, testEngine, type TestRuntime } from '../support/engine';
import { checkpointHolds, extendsEarlier, firstBreak } from '../support/readme-verifier';
import { listSigningKeys } from '@/server/ledger/proofs';
import { workspaceJwks } from '@/server/domain/grants/jwks';
import { generateNoteKey, vkeyOf } from '@/server/ledger/note';

const run = promisify(execFile);
// As npm runs them (package.json): scripts/tool.mjs bundles the tool and runs it.
const toolArgs = (script: string, args: string[]) => [path.join('scripts', 'tool.mjs'), path.basename(script, '.ts'), ...args];

let dir: string | undefined;
let pgRuntime: TestRuntime | undefined;
let childEnv: Record<string, string>;

/** Opens the tools' database in this process (PGlite: only while no tool has it open). */
async function openHere(): Promise<Runtime> {
  if (pgRuntime) return pgRuntime;
  return createRuntime(parseEnv({ NODE_ENV: 'test', PGLITE_DATA_DIR: childEnv.PGLITE_DATA_DIR, SEED_DEMO: 'false' }));
}
async function withHere<T>(fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const rt = await openHere();
  try {
    return await fn(rt);
  } finally {
    if (!pgRuntime) await rt.close();
  }
}

async function tool(script: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, toolArgs(script, args), {
      env: { ...process.env, ...childEnv, LOG_LEVEL: 'silent' },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A tool given `input` on its standard input. */
function toolWithInput(input: string, script: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, toolArgs(script, args), { env: { ...process.env, ...childEnv, LOG_LEVEL: 'silent' } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(input);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr })));
}

async function status(rt: Runtime, key: string): Promise<number> {
  const res = await callApi(rt, new Request('http://127.0.0.1/api/v1/events/stream', { headers: { authorization: `Bearer ${key}` } }));
  return res.status;
}

let demo: DemoWorkspace;
beforeAll(async () => {
  if (testEngine() === 'postgres') {
    pgRuntime = await createTestRuntime();
    childEnv = { DATABASE_URL: pgRuntime.databaseUrl! };
  } else {
    dir = mkdtempSync(path.join(os.tmpdir(), 'aws-cli-'));
    childEnv = { PGLITE_DATA_DIR: path.join(dir, 'pglite') };
  }
  demo = (await withHere((rt) => seedDemoIfEmpty(rt.db)))!;
});
afterAll(async () => {
  await pgRuntime?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('first start', () => {
  it('seeds a demo workspace whose printed key works, once', async () => {
    expect(demo.workspaceName).toBe('demo');
    expect(demo.apiKey).toMatch(/^awk_[A-Za-z0-9_-]{43}$/);
    expect(demo.ownerEmail).toBe('owner@demo.local');
    await withHere(async (rt) => {
      expect(await status(rt, demo.apiKey)).toBe(200);
      expect(await seedDemoIfEmpty(rt.db)).toBeNull();
      // Only hashes are stored: neither the key nor the password appears in the database.
      const rows = await rt.db.execute(sql`select secret_hash, (select password_hash from users limit 1) as p from api_keys`);
      const text = JSON.stringify(rows);
      expect(text).not.toContain(demo.apiKey);
      expect(text).not.toContain(demo.ownerPassword);
      expect(text).toContain('$argon2id$');
    });
  });
});

describe('npm run ledger:rotate-key', () => {
  it('gives the workspace a new checkpoint key, retires the old one and names the new one in the ledger', async () => {
    const made = await tool('workspace-create.ts', '--name', 'Rotating', '--owner-email', 'rita@rotating.test');
    expect(made.code, made.stderr).toBe(0);
    const workspaceId = /workspace\s+([0-9a-f-]{36})/.exec(made.stdout)![1]!;
    const first = await tool('ledger-rotate-key.ts', '--workspace', 'rotating');
    expect(first.code, first.stderr).toBe(0);
    const second = await tool('ledger-rotate-key.ts', '--workspace', workspaceId);
    expect(second.code, second.stderr).toBe(0);
    const vkeys = [first, second].map((r) => /: (\S+\+[0-9a-f]{8}\+\S+)$/m.exec(r.stdout)![1]!);
    expect(vkeys[0]).not.toBe(vkeys[1]);
    await withHere(async (rt) => {
      const keys = await query<{ key_id: string; retired: boolean }>(
        rt.db,
        sql`select key_id, retired_at is not null as retired from ledger_signing_keys where workspace_id = ${workspaceId} order by created_at`,
      );
      expect(keys.map((k) => [k.key_id, k.retired])).toEqual([
        [vkeys[0]!.split('+')[1], true],
        [vkeys[1]!.split('+')[1], false],
      ]);
      const [event] = await query<{ payload: { vkey: string; replaces: string } }>(
        rt.db,
        sql`select coalesce(payload, payload_text::jsonb) as payload from ledger_events where workspace_id = ${workspaceId} and event_type = 'ledger.key_added'`,
      );
      expect(event!.payload).toMatchObject({ vkey: vkeys[1], replaces: vkeys[0]!.split('+')[1] });
    });
    expect((await tool('ledger-rotate-key.ts')).code).toBe(2);
  });

  it('with --grants gives it a new grant key instead, which the JWKS serves beside the retired one, and leaves the checkpoint key', async () => {
    const made = await tool('workspace-create.ts', '--name', 'Rotating grants', '--owner-email', 'gina@rotating.test');
    expect(made.code, made.stderr).toBe(0);
    const workspaceId = /workspace\s+([0-9a-f-]{36})/.exec(made.stdout)![1]!;
    const kids: string[] = [];
    for (const run of [1, 2]) {
      const rotated = await tool('ledger-rotate-key.ts', '--workspace', workspaceId, '--grants');
      expect(rotated.code, `${run}: ${rotated.stderr}`).toBe(0);
      kids.push(/kid ([A-Za-z0-9_-]{43})$/m.exec(rotated.stdout)![1]!);
    }
    expect(kids[0]).not.toBe(kids[1]);
    await withHere(async (rt) => {
      const keys = await query<{ kid: string; retired: boolean }>(
        rt.db,
        sql`select kid, retired_at is not null as retired from grant_signing_keys where workspace_id = ${workspaceId} order by created_at`,
      );
      expect(keys.map((k) => [k.kid, k.retired])).toEqual([
        [kids[0], true],
        [kids[1], false],
      ]);
      expect((await workspaceJwks(rt.db, workspaceId)).keys.map((k) => k.kid)).toEqual(kids);
      expect(await listSigningKeys(rt.db, workspaceId)).toEqual([]);
    });
  });
});

describe('npm run key:create / key:revoke', () => {
  it('creates a working key for a workspace named by name, and revokes it', async () => {
    const created = await tool('key-create.ts', '--workspace', 'demo', '--name', 'ci');
    expect(created.code, created.stderr).toBe(0);
    const key = /awk_[A-Za-z0-9_-]{43}/.exec(created.stdout)?.[0];
    expect(key).toBeDefined();
    await withHere(async (rt) => expect(await status(rt, key!)).toBe(200));

    // The key from a file (never on the command line).
    const keyFile = path.join(os.tmpdir(), `aws-key-${process.pid}`);
    writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    onTestFinished(() => rmSync(keyFile, { force: true }));
    const revoked = await tool('key-revoke.ts', '--key-file', keyFile);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain('Revoked');
    expect((await tool('key-revoke.ts', '--key-file', keyFile)).stdout).toContain('was already revoked');
    await withHere(async (rt) => {
      expect(await status(rt, key!)).toBe(401);
      expect(await status(rt, demo.apiKey)).toBe(200);
    });
  });

  // PostgreSQL only: with PGlite the tool cannot open the directory a running server holds.
  if (testEngine() === 'postgres')
    it('key:revoke ends a running server’s open event-stream lease of that key at once', async () => {
      const created = await tool('key-create.ts', '--workspace', 'demo', '--name', 'leased');
      const key = /awk_[A-Za-z0-9_-]{43}/.exec(created.stdout)?.[0];
      expect(key).toBeDefined();
      // The "server": this process's runtime, which LISTENs; the tool is another process.
      const api = await serveApi(pgRuntime!);
      onTestFinished(() => api.close());
      const opened = Date.now();
      const res = await api.fetch(
        new Request('http://127.0.0.1/api/v1/events/stream?format=sse&lease_ms=30000&poll_ms=10000', {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
      expect(res.status).toBe(200);
      const reading = res.text();
      // The key on standard input (`--key-file -`).
      const revoked = await toolWithInput(`${key}\n`, 'key-revoke.ts', '--key-file', '-');
      expect(revoked.code, revoked.stderr).toBe(0);
      const frames = await reading;
      // Well before the lease's 30 s or a 10 s poll: the tool's NOTIFY woke the lease.
      expect(Date.now() - opened).toBeLessThan(20_000);
      expect(frames.trimEnd().split('\n\n').pop()).toContain('event: lease_end');
    });

  it('finds the workspace by id too, and refuses an unknown one', async () => {
    const byId = await tool('key-create.ts', '--workspace', demo.workspaceId);
    expect(byId.code, byId.stderr).toBe(0);
    const unknown = await tool('key-create.ts', '--workspace', 'no-such-workspace');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No workspace');
  });
});

describe('npm run user:add', () => {
  it('adds a human with a role and a password printed once; adding them twice is refused', async () => {
    const added = await tool(
      'user-add.ts',
      '--workspace',
      'demo',
      '--email',
      'Approver@Example.test',
      '--role',
      'approver',
      '--name',
      'Ada Approver',
    );
    expect(added.code, added.stderr).toBe(0);
    const password = /Password \(shown once\): (\S+)/.exec(added.stdout)?.[1];
    expect(password).toBeDefined();
    await withHere(async (rt) => {
      const [row] = await query<{ password_hash: string; display_name: string; role: string }>(
        rt.db,
        sql`select u.password_hash, u.display_name, m.role from users u join memberships m on m.user_id = u.id
            where u.email = 'approver@example.test' and m.workspace_id = ${demo.workspaceId}`,
      );
      expect(row).toMatchObject({ display_name: 'Ada Approver', role: 'approver' });
      expect(await verifyPassword(row!.password_hash, password!)).toBe(true);
      expect(await verifyPassword(row!.password_hash, 'wrong')).toBe(false);
    });
    const twice = await tool('user-add.ts', '--workspace', 'demo', '--email', 'approver@example.test', '--role', 'viewer');
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('already a member');
    const badRole = await tool('user-add.ts', '--workspace', 'demo', '--email', 'x@example.test', '--role', 'admin');
    expect(badRole.code).toBe(2);
  });
});

describe('npm run workspace:create', () => {
  it('creates a workspace with a new owner (one-time password) and a key; both work; the name is then taken in any case', async () => {
    const made = await tool(
      'workspace-create.ts',
      '--name',
      'Acme',
      '--owner-email',
      'Olga@Acme.test',
      '--owner-name',
      'Olga Owner',
      '--with-key',
    );
    expect(made.code, made.stderr).toBe(0);
    const password = /owner\s+olga@acme\.test\s+password (\S+)/.exec(made.stdout)?.[1];
    const key = /API key\s+(awk_[A-Za-z0-9_-]{43})/.exec(made.stdout)?.[1];
    const workspaceId = /workspace\s+([0-9a-f-]{36})/.exec(made.stdout)?.[1];
    expect(password && key && workspaceId, made.stdout).toBeTruthy();
    await withHere(async (rt) => {
      const res = await callApi(rt, new Request('http://127.0.0.1/api/v1/workspace', { headers: { authorization: `Bearer ${key}` } }));
      expect(res.status).toBe(200);
      expect(res.json().data).toMatchObject({ id: workspaceId, name: 'Acme', api_key: { name: 'workspace:create key' } });
      const [owner] = await query<{ password_hash: string; display_name: string; role: string }>(
        rt.db,
        sql`select u.password_hash, u.display_name, m.role from users u join memberships m on m.user_id = u.id
            where u.email = 'olga@acme.test' and m.workspace_id = ${workspaceId}`,
      );
      expect(owner).toMatchObject({ display_name: 'Olga Owner', role: 'owner' });
      expect(await verifyPassword(owner!.password_hash, password!)).toBe(true);
      // Its ledger holds its creation, the owner's membership, the Inbox and the key; no secret.
      const events = await query<{ event_type: string; text: string }>(
        rt.db,
        sql`select event_type, row_to_json(l)::text as text from ledger_events l where workspace_id = ${workspaceId} order by sequence`,
      );
      expect(events.map((e) => e.event_type)).toEqual([
        'workspace.created',
        'membership.created',
        'initiative.created',
        'workstream.created',
        'milestone.created',
        'api_key.created',
      ]);
      expect(events.map((e) => e.text).join()).not.toContain(password!);
      expect(events.map((e) => e.text).join()).not.toContain(key!);
    });
    // key:create finds it by name in any case.
    expect((await tool('key-create.ts', '--workspace', 'ACME')).code).toBe(0);

    const taken = await tool('workspace-create.ts', '--name', 'acme', '--owner-email', 'someone@acme.test');
    expect(taken.code).toBe(1);
    // The name as it exists, not as it was typed.
    expect(taken.stderr.trim()).toBe('A workspace named "Acme" already exists. Choose another name.');
    const long = await tool('workspace-create.ts', '--name', 'x'.repeat(101), '--owner-email', 'someone@acme.test');
    expect(long.code).toBe(1);
    expect(long.stderr).toContain('1 to 100 characters');
  });

  it('an existing account becomes owner and keeps its password', async () => {
    const made = await tool('workspace-create.ts', '--name', 'Second of demo', '--owner-email', demo.ownerEmail);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain('existing account: keeps its password');
    expect(made.stdout).not.toMatch(/password [A-Za-z0-9_-]{20}/);
    expect(made.stdout).not.toContain('API key');
  });
});

describe('npm run user:reset-password', () => {
  it('prints a new password that works, the old one stops, and every session ends', async () => {
    const email = 'reset-me@example.test';
    const added = await tool('user-add.ts', '--workspace', 'demo', '--email', email, '--role', 'viewer');
    const old = /Password \(shown once\): (\S+)/.exec(added.stdout)![1]!;
    const epochBefore = await withHere(
      async (rt) => (await query<{ e: number }>(rt.db, sql`select session_epoch as e from users where email = ${email}`))[0]!.e,
    );
    const reset = await tool('user-reset-password.ts', '--email', 'Reset-Me@example.test');
    expect(reset.code, reset.stderr).toBe(0);
    const fresh = reset.stdout.split('\n')[1]!.trim();
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{20}$/);
    await withHere(async (rt) => {
      const [row] = await query<{ h: string; e: number }>(
        rt.db,
        sql`select password_hash as h, session_epoch as e from users where email = ${email}`,
      );
      expect(await verifyPassword(row!.h, fresh)).toBe(true);
      expect(await verifyPassword(row!.h, old)).toBe(false);
      expect(row!.e).toBe(epochBefore + 1);
    });
    const unknown = await tool('user-reset-password.ts', '--email', 'nobody@example.test');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No account');
  });
});

describe('npm run projections:rebuild', () => {
  it('empties and rebuilds the projection tables from the ledger, leaving them as they were', async () => {
    const before = await withHere(async (rt) => {
      const actor = cliActor('test', { id: demo.workspaceId, ownerId: (await findWorkspace(rt.db, 'demo')).ownerId });
      await rt.db.transaction((tx) =>
        createInitiativeTree(tx, actor, {
          title: 'Rebuilt',
          visibility: 'workspace',
          model_tier: 'standard',
          execution_policy: { mode: 'sequential', max_concurrent_agents: 1 },
          workstreams: [
            { name: 'W', milestones: [{ title: 'M', tasks: [{ title: 'T', type: 'build', priority: 'high', estimate_hours: 2 }] }] },
          ],
        }),
      );
      await rt.db.transaction((tx) => createWork(tx, actor, { title: 'Loose end', priority: 'low' }));
      return loadFromTables(rt.db, demo.workspaceId);
    });
    expect(before.tasks.size).toBeGreaterThanOrEqual(2);
    const res = await tool('projections-rebuild.ts', '--workspace', 'demo');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('Rebuilt 1 workspace');
    const after = await withHere((rt) => loadFromTables(rt.db, demo.workspaceId));
    expect(after).toEqual(before);
  });
});

describe('npm run ledger:export, and ledger:verify --bundle with no database', () => {
  // Fourteen tool processes one after another: on a busy machine more than the default minute.
  it(
    'exports bundles that verify offline, a later one extending the earlier; a tampered bundle names its sequence',
    { timeout: 180_000 },
    async () => {
      const out = mkdtempSync(path.join(os.tmpdir(), 'aws-bundle-'));
      try {
        const first = path.join(out, 'first.json');
        const exported = await tool('ledger-export.ts', '--workspace', 'demo', '--out', first);
        expect(exported.code, exported.stderr).toBe(0);
        const bundle = JSON.parse(readFileSync(first, 'utf8'));
        expect(bundle.from).toEqual({ sequence: 0, hash: bundle.events[0].previousHash });
        expect(bundle.events.length).toBeGreaterThan(2);

        // Checked with no database: the tool gets no connection settings at all.
        const offline = (...args: string[]) =>
          run(process.execPath, toolArgs('ledger-verify.ts', args), {
            env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'silent' },
          }).then(
            (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
            (err: { code?: number; stdout?: string; stderr?: string }) => ({
              code: err.code ?? 1,
              stdout: err.stdout ?? '',
              stderr: err.stderr ?? '',
            }),
          );
        const ok = await offline('--bundle', first);
        expect(ok.code).toBe(0);
        expect(ok.stdout).toContain(`OK: ${bundle.events.length} events verified`);
        // It carries the signed checkpoint of its head (the export signed the tree up to it).
        const vkey = await withHere(async (rt) => (await listSigningKeys(rt.db, demo.workspaceId)).find((k) => !k.retired_at)!.vkey);
        expect(bundle.checkpoint).toMatchObject({ vkeys: [vkey], subtrees: [] });
        expect(bundle.checkpoint.note).toContain(`\n${bundle.head.sequence}\n`);
        expect(ok.stdout).toContain(
          `matching the checkpoint signed at tree size ${bundle.head.sequence} by key ${vkey.split('+')[1]} (a key the bundle lists: pin one with --vkey)`,
        );
        const pinned = await offline('--bundle', first, '--vkey', vkey, '--json');
        expect(pinned.code, pinned.stderr).toBe(0);
        expect(JSON.parse(pinned.stdout).checkpoint).toMatchObject({ treeSize: bundle.head.sequence, holds: true, pinned: true });
        const forger = vkeyOf(generateNoteKey(vkey.split('+')[0]!));
        const refused = await offline('--bundle', first, '--vkey', forger);
        expect(refused.code).toBe(3);
        expect(refused.stdout).toContain(`BROKEN at sequence ${bundle.head.sequence}: checkpoint_signature_invalid`);
        // A key that is not a verifier key is a usage error (2), not a bundle that fails (3).
        const unreadable = await offline('--bundle', first, '--vkey', `${vkey}x`);
        expect(unreadable.code).toBe(2);
        expect(unreadable.stderr).toContain('--vkey is not a verifier key');

        // New work, then an incremental export after the first one's head.
        await withHere(async (rt) => {
          const actor = cliActor('test', { id: demo.workspaceId, ownerId: (await findWorkspace(rt.db, 'demo')).ownerId });
          await rt.db.transaction((tx) => createWork(tx, actor, { title: 'After the export', priority: 'low' }));
        });
        const second = path.join(out, 'second.json');
        expect((await tool('ledger-export.ts', '--workspace', 'demo', '--previous', first, '--out', second)).code).toBe(0);
        const next = JSON.parse(readFileSync(second, 'utf8'));
        expect(next.from.sequence).toBe(bundle.head.sequence);
        expect(next.previous).toEqual(bundle.head);
        const extended = await offline('--bundle', second, '--previous', first);
        expect(extended.code).toBe(0);
        expect(extended.stdout).toContain('extending the earlier export');
        // Without the earlier export nothing shows it extends one: it says so, in the report and the line.
        const alone = await offline('--bundle', second, '--json');
        expect(alone.code).toBe(0);
        expect(JSON.parse(alone.stdout)).toMatchObject({ verified: true, extendsPrevious: null, continuesUncheckedExport: true });
        expect(alone.stderr).toContain('continuing an earlier export that was not checked');
        expect(alone.stderr).not.toContain('extending');
        // Through npm as docs/operators.md says to read it: -s leaves out npm's own lines on stdout.
        const viaNpm = await run('npm', ['run', '-s', 'ledger:verify', '--', '--bundle', second, '--json'], {
          env: { ...process.env, LOG_LEVEL: 'silent' },
        });
        expect(JSON.parse(viaNpm.stdout)).toMatchObject({ verified: true, continuesUncheckedExport: true });
        expect(JSON.parse((await offline('--bundle', second, '--previous', first, '--json')).stdout)).toMatchObject({
          verified: true,
          extendsPrevious: true,
          continuesUncheckedExport: false,
        });
        // docs/verification.md's recipe, followed by code that is not ours, accepts both and the extension.
        expect(firstBreak(bundle)).toBeNull();
        expect(firstBreak(next)).toBeNull();
        expect(extendsEarlier(next, bundle)).toBe(true);
        // ...and both checkpoints, the later one's root over the subtrees before it and its own events.
        expect(next.checkpoint.subtrees).toHaveLength([...next.from.sequence.toString(2)].filter((b) => b === '1').length);
        expect(checkpointHolds(bundle, vkey)).toBe(true);
        expect(checkpointHolds(next, vkey)).toBe(true);
        expect(checkpointHolds(next, forger)).toBe(false);
        expect((await offline('--bundle', second, '--vkey', vkey)).code).toBe(0);
        const moved = { ...next, checkpoint: { ...next.checkpoint, subtrees: [...next.checkpoint.subtrees].reverse() } };
        expect(checkpointHolds(moved, vkey)).toBe(next.checkpoint.subtrees.length < 2);

        // One field of one event changed in the file.
        const target = bundle.events[1];
        target.actorId = 'forged';
        writeFileSync(first, JSON.stringify(bundle));
        const broken = await offline('--bundle', first);
        expect(broken.code).toBe(3);
        expect(broken.stdout).toContain(`BROKEN at sequence ${target.sequence}: event_hash_mismatch`);
        expect(firstBreak(bundle)).toBe(target.sequence);
        expect(extendsEarlier(next, bundle)).toBe(false);
        // ...and the later export no longer extends the (now different) earlier one.
        expect((await offline('--bundle', second, '--previous', first)).code).toBe(3);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
  );
});

describe('npm run ledger:verify', () => {
  it('shows its progress on stderr with --progress (the default on a terminal), and nothing without it in a pipe', async () => {
    const shown = await tool('ledger-verify.ts', '--workspace', 'demo', '--progress', '--json');
    expect(shown.code, shown.stderr).toBe(0);
    const events = JSON.parse(shown.stdout).checkedEvents as number;
    expect(events).toBeGreaterThan(0);
    // Not a terminal here: whole lines, the last one at 100 % without a time left.
    const lines = shown.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^OK: /);
    expect(lines.at(-2)).toMatch(new RegExp(`^verified ${events} of ${events} events \\(100 %\\), [0-9,]+ events/s$`));
    const quiet = await tool('ledger-verify.ts', '--workspace', 'demo');
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).not.toContain('verified');
  });

  it('takes the number of worker threads with --workers, and refuses one that is not a whole number from 1', async () => {
    const one = await tool('ledger-verify.ts', '--workspace', 'demo', '--workers', '1', '--json');
    const three = await tool('ledger-verify.ts', '--workspace', 'demo', '--workers', '3', '--json');
    expect([one.code, three.code], one.stderr + three.stderr).toEqual([0, 0]);
    const report = (out: string) => ({ ...JSON.parse(out), seconds: undefined });
    expect(report(three.stdout)).toEqual(report(one.stdout));
    for (const bad of ['0', '-1', 'two', '1.5']) {
      const refused = await tool('ledger-verify.ts', '--workspace', 'demo', '--workers', bad);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('--workers');
    }
  });

  it('exits 0 on an intact chain and 3 naming the sequence of a tampered event, reporting what GET /ledger/verify reports', async () => {
    const ok = await tool('ledger-verify.ts', '--workspace', 'demo');
    expect(ok.code, ok.stderr).toBe(0);
    // The report, then a line to read.
    expect(ok.stdout).toMatch(
      /^\{\n[^]*\n\}\nOK: \d+ events verified, head \d+ sha256:[0-9a-f]{64}, matching the checkpoint signed at tree size \d+ by key [0-9a-f]{8}\n$/,
    );
    // With --json, the report alone (what jq reads); the line on stderr.
    const json = await tool('ledger-verify.ts', '--workspace', 'demo', '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(json.stderr).toMatch(/^OK: \d+ events verified/);
    // The same facts under the same names as the API's report, plus what was checked.
    const printed = JSON.parse(json.stdout);
    const served = await withHere(async (rt) => {
      const res = await callApi(
        rt,
        new Request('http://127.0.0.1/api/v1/ledger/verify', { headers: { authorization: `Bearer ${demo.apiKey}` } }),
      );
      return res.json().data;
    });
    expect(Object.keys(printed).sort()).toEqual([...Object.keys(served), 'seconds', 'workspace', 'workspaceId'].sort());
    expect({ ...printed, seconds: undefined, workspace: undefined, workspaceId: undefined }).toEqual({
      ...served,
      seconds: undefined,
      workspace: undefined,
      workspaceId: undefined,
    });
    expect(served).toMatchObject({ verified: true, lastVerified: served.head, firstBreak: null });

    await withHere((rt) =>
      rt.db.transaction(async (tx) => {
        await tx.execute(sql`alter table ledger_events disable trigger ledger_events_append_only`);
        await tx.execute(sql`update ledger_events set actor_id = 'forged' where workspace_id = ${demo.workspaceId} and sequence = 3`);
        await tx.execute(sql`alter table ledger_events enable trigger ledger_events_append_only`);
      }),
    );
    const broken = await tool('ledger-verify.ts', '--workspace', 'demo');
    expect(broken.code).toBe(3);
    expect(broken.stdout).toContain('BROKEN at sequence 3: event_hash_mismatch');
    const brokenJson = await tool('ledger-verify.ts', '--workspace', 'demo', '--json');
    expect(brokenJson.code).toBe(3);
    expect(JSON.parse(brokenJson.stdout)).toMatchObject({ verified: false, firstBreak: { sequence: 3, reason: 'event_hash_mismatch' } });
    expect(brokenJson.stderr).toContain('BROKEN at sequence 3: event_hash_mismatch');
  });

  it('exports the stored bytes of the artifacts a bundle registers beside it (--with-content), and verify checks each file', async () => {
    const out = mkdtempSync(path.join(os.tmpdir(), 'aws-bundle-content-'));
    try {
      const report = `# Delivered ${Date.now()}\n`;
      // A workspace of its own: another test of this file breaks the demo workspace's chain on purpose.
      const made = await tool('workspace-create.ts', '--name', 'Delivering', '--owner-email', 'dana@delivering.test');
      expect(made.code, made.stderr).toBe(0);
      await withHere(async (rt) => {
        const ws = await findWorkspace(rt.db, 'delivering');
        const actor = cliActor('test', { id: ws.id, ownerId: ws.ownerId });
        const { types } = await readCatalog(rt.db);
        await rt.db.transaction((tx) =>
          registerArtifact(
            tx,
            actor,
            { artifact_type: 'test_report', title: 'Report', media_type: 'text/markdown', content: Buffer.from(report).toString('base64') },
            types,
            rt.env.ARTIFACT_QUOTA_BYTES,
          ),
        );
      });
      const file = path.join(out, 'with-content.json');
      const exported = await tool('ledger-export.ts', '--workspace', 'delivering', '--out', file, '--with-content');
      expect(exported.code, exported.stderr).toBe(0);
      const digest = createHash('sha256').update(report).digest('hex');
      const copy = path.join(`${file}.content`, digest);
      // What sha256sum would print of it is its name.
      expect(createHash('sha256').update(readFileSync(copy)).digest('hex')).toBe(digest);
      expect(readFileSync(copy, 'utf8')).toBe(report);

      const ok = await tool('ledger-verify.ts', '--bundle', file, '--json');
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout).content).toMatchObject({ files: 1, problems: [] });
      expect(ok.stderr).toContain('OK: 1 artifact file');

      // A changed file, and a file the bundle does not register, are named; the exit status is 3.
      writeFileSync(copy, `${report}tampered`);
      const stray = createHash('sha256').update('not delivered').digest('hex');
      writeFileSync(path.join(`${file}.content`, stray), 'not delivered');
      const broken = await tool('ledger-verify.ts', '--bundle', file, '--json');
      expect(broken.code).toBe(3);
      expect(JSON.parse(broken.stdout).content.problems).toEqual(
        [
          { file: digest, problem: 'digest_mismatch' },
          { file: stray, problem: 'not_registered' },
        ].sort((a, b) => (a.file < b.file ? -1 : 1)),
      );
      expect(broken.stderr).toContain('BROKEN content: 2 files');

      const usage = await tool('ledger-export.ts', '--workspace', 'demo', '--with-content');
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('--with-content goes with --out');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('a reader that stops early (| head)', () => {
  it('ends ledger:export quietly with status 0, however much was left to write', async () => {
    // Far more than a pipe holds (64 KiB): the export is still writing when head has gone.
    await withHere(async (rt) => {
      const actor = cliActor('test', { id: demo.workspaceId, ownerId: (await findWorkspace(rt.db, 'demo')).ownerId });
      for (let i = 0; i < 20; i++) {
        await rt.db.transaction((tx) => createWork(tx, actor, { title: `Long ${i}`, description: 'x'.repeat(20_000), priority: 'low' }));
      }
    });
    const command = `node scripts/tool.mjs ledger-export --workspace demo | head -c 100 >/dev/null; echo "\${PIPESTATUS[0]}"`;
    const { stdout, stderr } = await run('bash', ['-c', command], { env: { ...process.env, ...childEnv, LOG_LEVEL: 'silent' } });
    expect(stderr).toBe('');
    expect(stdout.trim()).toBe('0');
    // It was cut short: the whole export is longer than the pipe.
    const whole = await tool('ledger-export.ts', '--workspace', 'demo');
    expect(whole.stdout.length).toBeGreaterThan(256 * 1024);
  });

  it('ends any tool quietly when stdout is closed before it writes, with the status it has otherwise', async () => {
    const closed = (script: string, ...args: string[]) => {
      const child = spawn(process.execPath, toolArgs(script, args), {
        env: { ...process.env, ...childEnv, LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // No reader from the start: every write to stdout fails with EPIPE.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      return new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stderr })));
    };
    expect(await closed('key-create.ts', '--workspace', 'demo', '--name', 'unread')).toEqual({ code: 0, stderr: '' });
    // ledger:verify's verdict is still its status; its line (on stderr with --json) is still shown.
    const open = await tool('ledger-verify.ts', '--workspace', 'demo', '--json');
    expect(await closed('ledger-verify.ts', '--workspace', 'demo', '--json')).toEqual({ code: open.code, stderr: open.stderr });
  });
});

// Only PGlite has a data directory that one process owns; PostgreSQL serves any number of clients.
if (testEngine() === 'pglite') {
  describe('a PGlite directory in use', () => {
    it('is refused to a second process with a clear message, and nothing is written', async () => {
      const holder = await openHere();
      try {
        const res = await tool('key-create.ts', '--workspace', 'demo');
        expect(res.code).toBe(1);
        expect(res.stderr).toContain('is in use by another process');
      } finally {
        await holder.close();
      }
    });
  });
}
