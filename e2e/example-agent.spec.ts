/**
 * examples/agent.ts, run as a user runs it (a process, against the started server, with a
 * workspace's API key), while a human approves its decision in Chromium: it plans, works, asks,
 * waits for the ruling on the event stream, finishes, and verifies the ledger itself.
 */
import { expect, test } from '@playwright/test';
import { freePort } from './npm-start';
import { APP_ORIGIN, fixture, runAgent, signIn } from './support';

test('the example agent works, asks, gets its ruling from a human in the browser, finishes and verifies the ledger', async ({ page }) => {
  test.setTimeout(90_000);
  const { child: agent, output, exited } = runAgent('examples/agent.ts', {});
  try {
    // It says where a human rules once its decision is raised.
    await expect
      .poll(() => /Waiting for a ruling: (\S+)/.exec(output.out)?.[1], { timeout: 30_000, message: `${output.out}\n${output.err}` })
      .toBeTruthy();
    const url = /Waiting for a ruling: (\S+)/.exec(output.out)![1]!;
    expect(url).toMatch(new RegExp(`^${APP_ORIGIN}/decisions/`));

    await signIn(page, fixture().users.approver);
    await page.goto(url);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Send the draft report to the board?');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByRole('button', { name: 'Confirm approve' }).click();
    await expect(page.getByRole('status')).toContainText('Approved');

    expect(await exited, `${output.out}\n${output.err}`).toBe(0);
    expect(output.out).toContain('Ruling: approved');
    expect(output.out).toContain('Run finished: completed');
    expect(output.out).toMatch(/^Ledger verified: \d+ events, head sha256:[0-9a-f]{64}$/m);
  } finally {
    if (agent.exitCode === null) agent.kill('SIGKILL');
  }
});

test('with no service at its address, the agent says which address it tried and how to set it', async () => {
  const closed = `http://127.0.0.1:${await freePort()}/api/v1`;
  // The client tries a refused connection again a few times (a server restarting) before it gives up.
  const { output, exited } = runAgent('examples/agent.ts', { AWS_BASE_URL: closed });
  const code = await exited;
  expect(code).toBe(1);
  expect(output.err).toContain(`no service answers at ${closed} (ECONNREFUSED)`);
  expect(output.err).toContain('AWS_BASE_URL');
});
