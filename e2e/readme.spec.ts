/**
 * The README's walk-through and the guides after it, run as a reader runs them, in one bash session on
 * an empty database: `npm start` (the first screen's command, which seeds the demo workspace and
 * prints its key), then every ```bash block of the README's "Walk-through" section in order, then
 * every ```bash block of each guide in docs/ (test/support/docs.ts: the order, and the few ```sh
 * blocks shown only, with why), with the key and workspace id npm start printed, the service running
 * throughout (the reader never has to stop it). Every `# →` line is checked against what came back
 * (test/support/readme-sketch.ts), every command must succeed, and every HTTP answer must be 2xx
 * unless a `# →` line shows its status. Where the text says a human acts
 * (`<!-- walk-through: … approves $D … -->`), the test signs in as the printed owner and approves
 * in Chromium. The landing page's example is run the same way, with the key its hint names. An
 * example that drifts fails CI.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { runnableBlocks, walkThroughSection, type DocBlock } from '../test/support/docs';
import { mismatches, parseSketch, type Sketch } from '../test/support/readme-sketch';
import { freePort, npmStart, signInAt, type Started } from './npm-start';

const root = path.resolve(import.meta.dirname, '..');

interface Block {
  /** Where it is written, the block as written, and as run (each `# →` sketch replaced by a marker). */
  file: string;
  source: string;
  script: string;
  sketches: Sketch[];
  /** A human step the text places right after this block. */
  humanAfter: string | null;
}

function toBlock(block: DocBlock, vars: Record<string, string>, port: number): Block {
  return { ...block, ...toScript(block.source, vars, port) };
}

function toScript(source: string, vars: Record<string, string>, port: number): { script: string; sketches: Sketch[] } {
  const lines = source.split('\n');
  const out: string[] = [];
  const sketches: Sketch[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const arrow = /^# → (.*)$/.exec(line);
    if (arrow) {
      const text = [arrow[1]!];
      while (i + 1 < lines.length && /^#\s{2,}\S/.test(lines[i + 1]!)) text.push(lines[++i]!.replace(/^#\s+/, ''));
      // The text shows the default address; the test's server has its own port.
      sketches.push(parseSketch(text.join('\n').replaceAll('localhost:3000', `localhost:${port}`)));
      out.push(`__expect ${sketches.length - 1}`);
      continue;
    }
    const code = line.replace(/\s+#.*$/, '');
    if (code.startsWith('export ') && code.includes('…')) {
      // The line that says to paste what npm start printed: the test pastes it.
      const names = [...code.matchAll(/(\w+)=/g)].map((m) => m[1]!);
      expect(
        names.every((n) => n in vars),
        `the README exports ${names.join(', ')}`,
      ).toBe(true);
      expect(code).toContain('BASE=http://localhost:3000/api/v1 ');
      out.push(`export ${names.map((n) => `${n}='${vars[n]}'`).join(' ')}`);
      continue;
    }
    expect(code.startsWith('#') || !code.includes('…'), `a command with a placeholder in it cannot be run: ${line}`).toBe(true);
    out.push(line);
  }
  return { script: out.join('\n'), sketches };
}

/**
 * One bash session, as a reader's terminal: variables set by one block are there for the next.
 * curl is wrapped only to end each answer with a newline (the API's JSON has none) and note its
 * HTTP status in a side file; everything else runs as written. Any failing command is reported.
 */
class Shell {
  private readonly bash: ChildProcessWithoutNullStreams;
  private output = '';
  private waiting: { marker: RegExp; resolve: (text: string) => void } | null = null;
  private consumed = 0;

  constructor(readonly dir: string) {
    this.bash = spawn('bash', ['--noprofile', '--norc'], {
      cwd: dir,
      // A reader's terminal: their PATH, and nothing of this test's environment.
      env: { PATH: process.env.PATH!, HOME: dir, LANG: 'C.UTF-8', NODE_ENV: 'production' },
    });
    this.bash.stdout.on('data', (c: Buffer) => this.take(c));
    this.bash.stderr.on('data', (c: Buffer) => this.take(c));
    this.bash.stdin.write(
      [
        // Output through a pipe, as in a terminal's pipelines: Node's stdio is a socket, which
        // /dev/stderr (the README's `tee /dev/stderr`) cannot be opened on.
        'exec > >(cat) 2>&1',
        'set -o pipefail',
        `__statuses="${dir}/.statuses"; : > "$__statuses"`,
        `curl() { command curl -w '\\n%{stderr}%{http_code}\\n' "$@" 2>>"$__statuses"; }`,
        `__drain() { tr '\\n' ' ' < "$__statuses"; : > "$__statuses"; }`,
        '__expect() { echo "@@EXPECT $1 $(__drain)"; }',
        'trap \'echo "@@FAILED $? $BASH_COMMAND"\' ERR',
        '',
      ].join('\n'),
    );
  }

  private take(chunk: Buffer) {
    this.output += chunk.toString();
    const w = this.waiting;
    if (w && w.marker.test(this.output.slice(this.consumed))) {
      this.waiting = null;
      const text = this.output.slice(this.consumed);
      this.consumed = this.output.length;
      w.resolve(text);
    }
  }

  /** Runs a script file to its end; returns everything it printed, markers included. */
  async run(file: string, id: string): Promise<string> {
    const done = new Promise<string>((resolve) => (this.waiting = { marker: new RegExp(`@@END ${id} [^\\n]*\\n`), resolve }));
    this.bash.stdin.write(`source '${file}' < /dev/null; echo "@@END ${id} $(__drain)"\n`);
    return done;
  }

  close() {
    this.bash.stdin.end();
    this.bash.kill();
  }
}

/** Checks what one block printed: its sketches, its statuses, and no failed command. */
function checkBlock(block: Block, index: number, printed: string): string[] {
  const problems: string[] = [];
  for (const failed of printed.matchAll(/@@FAILED (\d+) (.*)/g)) problems.push(`a command failed (exit ${failed[1]}): ${failed[2]}`);
  // Output between markers belongs to the commands since the marker before.
  const parts = printed.split(/^@@(EXPECT \d+|END \S+) ?(.*)$/m);
  for (let i = 1; i < parts.length; i += 3) {
    const [marker, statusText] = [parts[i]!, parts[i + 1]!];
    const output = parts[i - 1]!;
    const statuses = statusText.trim().split(/\s+/).filter(Boolean).map(Number);
    const expect = /^EXPECT (\d+)$/.exec(marker);
    const sketch = expect ? block.sketches[Number(expect[1])]! : null;
    const last = statuses.at(-1) ?? null;
    statuses.forEach((status, j) => {
      const shown = sketch !== null && j === statuses.length - 1 && sketch.status !== null;
      if (status >= 400 && !shown) problems.push(`HTTP ${status} where the text shows no error status`);
    });
    if (sketch) {
      for (const m of mismatches(sketch, { status: last, output: output.replace(/@@FAILED.*\n/g, '') })) {
        problems.push(`# → ${expect![1]}: ${m}`);
      }
    }
  }
  return problems.map((p) => `${block.file}, block ${index + 1}: ${p}`);
}

test.describe.configure({ mode: 'serial' });

test.describe('the README, run', () => {
  let dir: string;
  let s: Started | undefined;
  let shell: Shell;
  test.beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'aws-readme-'));
    shell = new Shell(dir);
  });
  test.afterAll(async () => {
    shell?.close();
    if (s && s.npm.exitCode === null) {
      process.kill(-s.npm.pid!, 'SIGINT');
      await s.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('the walk-through and every guide, block by block, show what comes back', async ({ browser }) => {
    test.setTimeout(480_000);
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const port = await freePort();
    const vars: Record<string, string> = { BASE: `http://localhost:${port}/api/v1`, KEY: '', WORKSPACE_ID: '' };
    const blocks = runnableBlocks().map((b) => toBlock(b, vars, port));
    const walkThrough = blocks.filter((b) => b.file === 'README.md');
    expect(walkThrough.length).toBeGreaterThanOrEqual(4);
    expect(walkThrough.reduce((n, b) => n + b.sketches.length, 0)).toBeGreaterThanOrEqual(10);
    expect(blocks.length).toBeGreaterThanOrEqual(14);
    expect(blocks.reduce((n, b) => n + b.sketches.length, 0)).toBeGreaterThanOrEqual(40);
    // The first screen's npm start, and nothing before it: no block a reader runs stops the service.
    expect(walkThroughSection(readme)).not.toMatch(/workspace:create|service is stopped|stop the service/);
    for (const block of blocks) {
      const commands = block.source.replace(/(^|\s)#.*$/gm, '');
      expect(commands, block.file).not.toMatch(/workspace:create|npm (run|start|stop)|kill /);
    }
    s = await npmStart(path.join(dir, 'pglite'), port);
    expect(s.apiKey && s.workspaceId && s.owner.password, s.output()).toBeTruthy();
    Object.assign(vars, { KEY: s.apiKey, WORKSPACE_ID: s.workspaceId });
    const problems: string[] = [];
    for (const [index, block] of blocks.entries()) {
      const file = path.join(dir, `block-${index + 1}.sh`);
      block.script = toScript(block.source, vars, port).script;
      writeFileSync(file, block.script);
      const printed = await shell.run(file, `block-${index + 1}`);
      problems.push(...checkBlock(block, index, printed));
      if (block.humanAfter) {
        // The text's human step: only "approves $VAR" is written there so far.
        const step = /approves (?:decision )?\$(\w+)/.exec(block.humanAfter);
        expect(step, `a human step the test knows: ${block.humanAfter}`).not.toBeNull();
        const id = await readVar(shell, dir, step![1]!);
        const { context, page } = await signInAt(browser, s!.url, s!);
        await page.goto(`/decisions/${id}`);
        await page.getByLabel('Note (optional)').fill('Approved in the walk-through.');
        await page.getByRole('button', { name: 'Approve', exact: true }).click();
        await page.getByRole('button', { name: 'Confirm approve' }).click();
        await expect(page.getByRole('status')).toContainText('Approved');
        await context.close();
      }
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  test('the landing page’s example runs as shown, with the key its hint names', async ({ page }) => {
    await page.goto(`${s!.url}/`);
    const example = await page.locator('pre code').first().innerText();
    // The key it means is the one npm start printed (the demo workspace's), and it says so.
    expect(example).toContain('# the key npm start printed');
    await expect(page.locator('main')).toContainText('KEY is the demo workspace’s API key, printed once by npm start');
    const file = path.join(dir, 'landing.sh');
    writeFileSync(file, `export BASE='${s!.url}/api/v1' KEY='${s!.apiKey}'\n${example.replace(/^export .*\n/m, '')}\n__expect 0\n`);
    const printed = await shell.run(file, 'landing');
    const block: Block = {
      file: 'the landing page',
      source: example,
      script: '',
      sketches: [parseSketch('201 {"data":{"taskId":"…","receiptId":"…"}}')],
      humanAfter: null,
    };
    expect(checkBlock(block, 0, printed)).toEqual([]);
  });
});

/** A shell variable's value, read through a file (its output would be mixed with the session's). */
async function readVar(shell: Shell, dir: string, name: string): Promise<string> {
  const file = path.join(dir, `var-${name}.sh`);
  writeFileSync(file, `printf '%s' "$${name}" > '${dir}/var-${name}.txt'\n`);
  await shell.run(file, `read-${name}`);
  return readFileSync(path.join(dir, `var-${name}.txt`), 'utf8');
}
