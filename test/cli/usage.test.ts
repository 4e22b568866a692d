/**
 * Every command-line tool explains itself: `--help` prints its usage and every option and exits 0
 * without opening a database; wrong usage is one line saying what is wrong, then the usage, exit 2,
 * never a stack trace. Run as processes, as a user runs them (npm run <tool> -- …).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = process.cwd();

// The tools are the package's scripts that run `node scripts/tool.mjs <name>` (scripts/<name>.ts).
const scripts = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
const tools = Object.entries(scripts)
  .map(([name, command]) => ({ name, tool: /^node scripts\/tool\.mjs ([\w-]+)$/.exec(command)?.[1] }))
  .map(({ name, tool }) => ({ name, file: tool && `scripts/${tool}.ts` }))
  .filter((t): t is { name: string; file: string } => t.file !== undefined);

const scratch = mkdtempSync(path.join(os.tmpdir(), 'aws-cli-usage-'));
// A database that is not there: nothing here may need one.
const env = { ...process.env, PGLITE_DATA_DIR: path.join(scratch, 'never-created'), DATABASE_URL: '', LOG_LEVEL: 'silent' };
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function tool(file: string, ...args: string[]) {
  try {
    const name = path.basename(file, '.ts');
    const { stdout, stderr } = await run(process.execPath, ['scripts/tool.mjs', name, ...args], { cwd: root, env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const stackTrace = /\n\s+at |ERR_PARSE_ARGS|node:internal/;

/** The options a tool's source declares (`name: { type: 'string'`, or `'owner-email': {` then `type:`), in order. */
function declaredOptions(file: string): { name: string; type: string }[] {
  const source = readFileSync(path.join(root, file), 'utf8');
  return [...source.matchAll(/^\s{4}'?([\w-]+)'?: \{\s*type: '(string|boolean)'/gm)].map((m) => ({ name: m[1]!, type: m[2]! }));
}

describe('every command-line tool', () => {
  it('that takes an API key refuses it on the command line, in one line that does not repeat it', { timeout: 60_000 }, async () => {
    const key = 'awk_' + 'k'.repeat(43);
    const refused = await Promise.all([
      tool('scripts/ledger-witness.ts', '--url', 'http://127.0.0.1:9/api/v1', '--state', 's.json', '--key', key),
      tool('scripts/key-revoke.ts', `--key=${key}`),
      tool('scripts/mcp.ts', '--url', 'http://127.0.0.1:9', '--key', key),
    ]);
    for (const [res, name] of refused.map((r, i) => [r, ['ledger:witness', 'key:revoke', 'mcp'][i]] as const)) {
      expect(res.code).toBe(2);
      expect(res.stderr.split('\n')[0]).toBe(
        `npm run ${name}: --key would show the key in shell history, ps and npm’s echo of the command: set AWS_API_KEY, or give --key-file <path>`,
      );
      expect(res.stdout + res.stderr).not.toContain(key);
    }
    // With neither the variable nor the file, it says where the key goes.
    const none = await tool('scripts/ledger-witness.ts', '--url', 'http://127.0.0.1:9/api/v1', '--state', 's.json');
    expect([none.code, none.stderr.split('\n')[0]]).toEqual([
      2,
      'npm run ledger:witness: set AWS_API_KEY to an API key of the workspace, or give --key-file <path>',
    ]);
  });

  it('is found: twelve tools', () => {
    expect(tools.map((t) => t.name).sort()).toEqual([
      'key:create',
      'key:revoke',
      'ledger:export',
      'ledger:rotate-key',
      'ledger:verify',
      'ledger:witness',
      'mcp',
      'projections:rebuild',
      'user:add',
      'user:reset-password',
      'workspace:create',
      'workspace:restore',
    ]);
  });

  it.each(tools)(
    '$name answers --help and -h with its usage and every option, exit 0, no database',
    { timeout: 60_000 },
    async ({ name, file }) => {
      const [help, short] = await Promise.all([tool(file, '--help'), tool(file, '-h')]);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stderr).toBe('');
      expect(short).toEqual(help);
      expect(help.stdout).toContain(`Usage: npm run ${name} -- `);
      // Every option the tool's source declares is in the help.
      const declared = declaredOptions(file);
      expect(declared.length).toBeGreaterThan(0);
      for (const option of declared) expect(help.stdout).toContain(`--${option.name}`);
      expect(help.stdout).toContain('Exit status');
      expect(existsSync(env.PGLITE_DATA_DIR)).toBe(false);
    },
  );

  it.each(tools)(
    '$name refuses an unknown option, a stray argument and a missing value: one line and the usage, exit 2',
    { timeout: 60_000 },
    async ({ name, file }) => {
      const option = declaredOptions(file).find((o) => o.type === 'string')!.name;
      const [unknown, stray, missing] = await Promise.all([tool(file, '--bogus'), tool(file, 'stray'), tool(file, `--${option}`)]);
      for (const res of [unknown, stray, missing]) {
        expect(res.code).toBe(2);
        expect(res.stdout).toBe('');
        expect(res.stderr).not.toMatch(stackTrace);
        const [first, ...rest] = res.stderr.trimEnd().split('\n');
        expect(first).toMatch(new RegExp(`^npm run ${name}: `));
        expect(rest[0]).toMatch(new RegExp(`^Usage: npm run ${name} -- `));
      }
      expect(unknown.stderr.split('\n')[0]).toBe(`npm run ${name}: unknown option --bogus`);
      expect(stray.stderr.split('\n')[0]).toBe(`npm run ${name}: unexpected argument stray`);
      expect(missing.stderr.split('\n')[0]).toBe(`npm run ${name}: --${option} needs a value`);
      expect(existsSync(env.PGLITE_DATA_DIR)).toBe(false);
    },
  );

  it('says which required option is missing, and which value is wrong', { timeout: 60_000 }, async () => {
    const [noWorkspace, badRole, noKey, both, noOwner, badEmail] = await Promise.all([
      tool('scripts/key-create.ts'),
      tool('scripts/user-add.ts', '--workspace', 'demo', '--email', 'a@b.c', '--role', 'admin'),
      tool('scripts/key-revoke.ts', '--workspace', 'demo'),
      tool('scripts/ledger-verify.ts', '--workspace', 'demo', '--bundle', 'b.json'),
      tool('scripts/workspace-create.ts', '--name', 'acme'),
      tool('scripts/workspace-create.ts', '--name', 'acme', '--owner-email', 'not-an-email'),
    ]);
    expect([noWorkspace, badRole, noKey, both, noOwner, badEmail].map((r) => [r.code, r.stderr.split('\n')[0]])).toEqual([
      [2, 'npm run key:create: --workspace is required'],
      [2, 'npm run user:add: --role is one of owner, approver, viewer'],
      [2, 'npm run key:revoke: give --key-file, or --workspace and --id'],
      [2, 'npm run ledger:verify: give --workspace or --bundle (one of them)'],
      [2, 'npm run workspace:create: --owner-email is required'],
      [2, 'npm run workspace:create: --owner-email must be an email address'],
    ]);
  });
});
