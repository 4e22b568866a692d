/**
 * A bundle's `.content/` folder is not trusted, by either tool. `ledger:verify --bundle` meets a
 * hand-made one holding links (to a file elsewhere, to /dev/zero), a FIFO, a folder and files over
 * the stored limit (sparse: they cost nothing, and one is far too large to read): each is a problem,
 * exit 3, at once, nothing followed or read whole. `ledger:export --with-content` meets a folder
 * with a link planted in it, or a link where the folder goes: it refuses, and the file the link
 * names is untouched. Run as processes against a database of the run's engine.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_STORED_BYTES } from '@/db/schema';
import { registerArtifact } from '@/server/domain/artifacts/artifacts';
import { readCatalog } from '@/server/domain/artifact-types/catalog';
import { seedDemoIfEmpty } from '@/server/domain/workspaces/seed-demo';
import { cliActor, findWorkspace } from '../../scripts/cli';
import { toolDatabase, type ToolDatabase } from '../support/tool-database';

const run = promisify(execFile);
let db: ToolDatabase;
/** An export with its content folder, as ledger:export wrote it. */
let bundle: string;
const report = `# Delivered ${Date.now()}\n`;
const digest = createHash('sha256').update(report).digest('hex');

/** A tool run as a process; a hang ends at `timeout` (killed: code null), failing the test. */
async function tool(name: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join('scripts', 'tool.mjs'), name, ...args], {
      env: { ...process.env, ...db.env, LOG_LEVEL: 'silent' },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | null; stdout?: string; stderr?: string };
    return { code: e.code ?? null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

beforeAll(async () => {
  db = await toolDatabase('content');
  await db.withDb(async (rt) => {
    await seedDemoIfEmpty(rt.db);
    const ws = await findWorkspace(rt.db, 'demo');
    const { types } = await readCatalog(rt.db);
    const input = {
      artifact_type: 'test_report',
      title: 'Report',
      media_type: 'text/markdown',
      content: Buffer.from(report).toString('base64'),
    };
    await rt.db.transaction((tx) =>
      registerArtifact(tx, cliActor('test', { id: ws.id, ownerId: ws.ownerId }), input, types, rt.env.ARTIFACT_QUOTA_BYTES),
    );
  });
  bundle = path.join(db.dir, 'exported', 'bundle.json');
  mkdirSync(path.dirname(bundle));
  const exported = await tool('ledger-export', '--workspace', 'demo', '--out', bundle, '--with-content');
  expect(exported.code, exported.stderr).toBe(0);
}, 120_000);
afterAll(async () => {
  await db?.close();
});

/** A copy of the exported bundle in a folder of its own, with an empty content folder beside it. */
function copyOfBundle(name: string): { file: string; content: string } {
  const file = path.join(db.dir, name, 'bundle.json');
  mkdirSync(path.dirname(file));
  cpSync(bundle, file);
  mkdirSync(`${file}.content`);
  return { file, content: `${file}.content` };
}

const hex = (text: string) => createHash('sha256').update(text).digest('hex');

describe('ledger:verify --bundle with a hand-made content folder', () => {
  it('reports links, a FIFO, a folder and oversize files as problems (exit 3) at once, following and reading none', async () => {
    const { file, content } = copyOfBundle('hostile');
    // A file outside holding the registered bytes: followed, the link would check.
    const outside = path.join(db.dir, 'outside.md');
    writeFileSync(outside, report);
    symlinkSync(outside, path.join(content, digest));
    symlinkSync('/dev/zero', path.join(content, hex('zero')));
    const fifo = path.join(content, hex('fifo'));
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    mkdirSync(path.join(content, hex('folder')));
    // Sparse: one byte over the limit, and 8 GiB (read whole, it could not be held in memory at all).
    writeFileSync(path.join(content, hex('over')), '');
    truncateSync(path.join(content, hex('over')), MAX_STORED_BYTES + 1);
    writeFileSync(path.join(content, hex('huge')), '');
    truncateSync(path.join(content, hex('huge')), 8 * 1024 ** 3);

    const started = Date.now();
    const verified = await tool('ledger-verify', '--bundle', file, '--json');
    expect(verified.code, verified.stderr).toBe(3);
    expect(Date.now() - started).toBeLessThan(25_000);
    const expected = [
      { file: digest, problem: 'not_a_regular_file' },
      { file: hex('zero'), problem: 'not_a_regular_file' },
      { file: hex('fifo'), problem: 'not_a_regular_file' },
      { file: hex('folder'), problem: 'not_a_regular_file' },
      { file: hex('over'), problem: 'too_large' },
      { file: hex('huge'), problem: 'too_large' },
    ].sort((a, b) => (a.file < b.file ? -1 : 1));
    expect(JSON.parse(verified.stdout).content).toMatchObject({ files: 6, problems: expected });
    expect(verified.stderr).toContain(`BROKEN content: 6 files of ${content} do not check`);
    expect(readFileSync(outside, 'utf8')).toBe(report);
  }, 60_000);

  it('reports a link where the content folder goes, and still checks the exported folder', async () => {
    const linked = copyOfBundle('linked');
    rmSync(linked.content, { recursive: true });
    symlinkSync(`${bundle}.content`, linked.content);
    const verified = await tool('ledger-verify', '--bundle', linked.file, '--json');
    expect(verified.code, verified.stderr).toBe(3);
    expect(JSON.parse(verified.stdout).content.problems).toEqual([{ file: 'bundle.json.content', problem: 'not_a_directory' }]);

    const ok = await tool('ledger-verify', '--bundle', bundle);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('OK: 1 artifact file');
  }, 60_000);
});

describe('ledger:export --with-content', () => {
  it('refuses a content folder that is there already, and writes nothing through a link planted in it', async () => {
    const out = path.join(db.dir, 'planted');
    mkdirSync(out);
    const victim = path.join(db.dir, 'victim.txt');
    writeFileSync(victim, 'keep me');
    const file = path.join(out, 'bundle.json');
    mkdirSync(`${file}.content`);
    symlinkSync(victim, path.join(`${file}.content`, digest));
    const planted = await tool('ledger-export', '--workspace', 'demo', '--out', file, '--with-content');
    expect(planted.code).toBe(1);
    expect(planted.stderr).toContain(`${file}.content already exists: remove it`);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');
    expect(existsSync(file)).toBe(false);

    // A link where the folder goes is refused too: the folder it names stays empty.
    const elsewhere = path.join(db.dir, 'elsewhere');
    mkdirSync(elsewhere);
    const second = path.join(out, 'second.json');
    symlinkSync(elsewhere, `${second}.content`);
    const linked = await tool('ledger-export', '--workspace', 'demo', '--out', second, '--with-content');
    expect(linked.code).toBe(1);
    expect(linked.stderr).toContain('already exists');
    expect(readdirSync(elsewhere)).toEqual([]);

    // Removed, the export goes through, and leaves no folder of its own behind but the content.
    rmSync(`${file}.content`, { recursive: true });
    const fresh = await tool('ledger-export', '--workspace', 'demo', '--out', file, '--with-content');
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(readFileSync(path.join(`${file}.content`, digest), 'utf8')).toBe(report);
    expect(readdirSync(out).sort()).toEqual(['bundle.json', 'bundle.json.content', 'second.json.content']);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');
  }, 90_000);
});
