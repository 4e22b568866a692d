/**
 * examples/agent.ts, run as a user runs it (a process, against the started server, with a
 * workspace's API key), while a human approves its decision in Chromium: it plans, works, asks,
 * waits for the ruling on the event stream, finishes, and verifies the ledger itself.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { freePort } from './npm-start';
import { APP_ORIGIN, fixture, signIn } from './support';

const root = path.resolve(import.meta.dirname, '..');

test('the example agent works, asks, gets its ruling from a human in the browser, finishes and verifies the ledger', async ({ page }) => {
  test.setTimeout(90_000);
  const agent = spawn(path.join(root, 'node_modules', '.bin', 'tsx'), ['examples/agent.ts'], {
    cwd: root,
    env: { ...process.env, AWS_API_KEY: fixture().apiKey, AWS_BASE_URL: `${APP_ORIGIN}/api/v1` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  agent.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  agent.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => agent.on('exit', resolve));
  try {
    // It says where a human rules once its decision is raised.
    await expect.poll(() => /Waiting for a ruling: (\S+)/.exec(out)?.[1], { timeout: 30_000, message: `${out}\n${err}` }).toBeTruthy();
    const url = /Waiting for a ruling: (\S+)/.exec(out)![1]!;
    expect(url).toMatch(new RegExp(`^${APP_ORIGIN}/decisions/`));

    await signIn(page, fixture().users.approver);
    await page.goto(url);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Send the draft report to the board?');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByRole('button', { name: 'Confirm approve' }).click();
    await expect(page.getByRole('status')).toContainText('Approved');

    expect(await exited, `${out}\n${err}`).toBe(0);
    expect(out).toContain('Ruling: approved');
    expect(out).toContain('Run finished: completed');
    expect(out).toMatch(/^Ledger verified: \d+ events, head sha256:[0-9a-f]{64}$/m);
  } finally {
    if (agent.exitCode === null) agent.kill('SIGKILL');
  }
});

test('with no service at its address, the agent says which address it tried and how to set it', async () => {
  const closed = `http://127.0.0.1:${await freePort()}/api/v1`;
  const agent = spawn(path.join(root, 'node_modules', '.bin', 'tsx'), ['examples/agent.ts'], {
    cwd: root,
    env: { ...process.env, AWS_API_KEY: fixture().apiKey, AWS_BASE_URL: closed },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  agent.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const code = await new Promise<number | null>((resolve) => agent.on('exit', resolve));
  expect(code).toBe(1);
  expect(err).toContain(`no service answers at ${closed} (ECONNREFUSED)`);
  expect(err).toContain('AWS_BASE_URL');
});
