/**
 * The MCP front door, as users meet it: examples/mcp-agent.ts (the SDK's client over Streamable
 * HTTP) runs its whole loop as a process while a human approves its decision in Chromium, and the
 * stdio bridge (npm run --silent mcp, as Claude Code starts it) carries a wait for a ruling made in
 * Chromium. The ruling reaches the agent within a second of the click.
 */
import { expect, test, type Page } from '@playwright/test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { APP_ORIGIN, fixture, runAgent, signIn } from './support';

/** Approves on the decision page; resolves with the time of the confirming click. */
async function approve(page: Page, url: string, title: string): Promise<number> {
  await page.goto(url);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(title);
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  const confirm = page.getByRole('button', { name: 'Confirm approve' });
  await expect(confirm).toBeEnabled();
  const clicked = Date.now();
  await confirm.click();
  return clicked;
}

test('the MCP example agent claims, checkpoints, waits for a ruling made in the browser, finishes and verifies', async ({ page }) => {
  test.setTimeout(90_000);
  const { child: agent, output, exited } = runAgent('examples/mcp-agent.ts', { AWS_MCP_URL: `${APP_ORIGIN}/mcp` });
  try {
    await expect
      .poll(() => /Waiting for a ruling: (\S+)/.exec(output.out)?.[1], { timeout: 30_000, message: `${output.out}\n${output.err}` })
      .toBeTruthy();
    const url = /Waiting for a ruling: (\S+)/.exec(output.out)![1]!;
    expect(url).toMatch(new RegExp(`^${APP_ORIGIN}/decisions/[0-9a-f-]{36}$`));
    expect(output.out).toMatch(/^Claimed: Rotate the staging database password, run /m);

    await signIn(page, fixture().users.approver);
    const clicked = await approve(page, url, 'Rotate the staging database password now?');
    await expect.poll(() => output.out.includes('Ruling: approved'), { timeout: 5_000, intervals: [10] }).toBe(true);
    expect(Date.now() - clicked).toBeLessThan(1_000);

    expect(await exited, `${output.out}\n${output.err}`).toBe(0);
    expect(output.out).toContain('Ruling: approved (wait ruled)');
    expect(output.out).toContain('Run finished: completed');
    expect(output.out).toMatch(/^Ledger verified: \d+ events, head sha256:[0-9a-f]{64}$/m);
  } finally {
    if (agent.exitCode === null) agent.kill('SIGKILL');
  }
});

test('over stdio (npm run mcp): create_work, then request_decision waits for the approval made in the browser', async ({ page }) => {
  test.setTimeout(90_000);
  const transport = new StdioClientTransport({
    command: 'npm',
    args: ['run', '--silent', 'mcp', '--', '--url', `${APP_ORIGIN}/api/v1`],
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', AWS_API_KEY: fixture().apiKey },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'e2e-stdio', version: '1' });
  await client.connect(transport);
  try {
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('request_decision');
    const created = (await client.callTool({ name: 'create_work', arguments: { title: 'Filed over stdio' } })) as CallToolResult;
    expect(created._meta?.['aws/status']).toBe(201);

    const title = `Merge the stdio branch? ${Date.now()}`;
    let page_: string | undefined;
    let answeredAt = 0;
    const waiting = (
      client.callTool({ name: 'request_decision', arguments: { title, wait_seconds: 30 } }, undefined, {
        onprogress: (p) => (page_ ??= /(https?:\/\/\S+\/decisions\/\S+)/.exec(p.message ?? '')?.[1]),
        timeout: 60_000,
      }) as Promise<CallToolResult>
    ).then((result) => {
      answeredAt = Date.now();
      return result;
    });
    await expect.poll(() => page_, { timeout: 15_000 }).toBeTruthy();

    await signIn(page, fixture().users.approver);
    const clicked = await approve(page, page_!, title);
    const result = await waiting;
    expect(answeredAt - clicked).toBeLessThan(1_000);
    expect(result.structuredContent).toMatchObject({ decision: { status: 'approved' }, wait: { ended: 'ruled' } });
  } finally {
    await client.close();
  }
});
