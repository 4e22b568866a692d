import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from '@playwright/test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startUpstream } from '../test/support/upstream-mcp';
import { agent, APP_ORIGIN, raiseAndAsk, fixture, signIn } from './support';

// axe-core's WCAG 2 A/AA rules on each page a human uses; any violation fails the test.
async function violations(page: Page) {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa']).analyze();
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length})`);
}

test('sign-in, decisions list, decision, task, ledger, members, account, new workspace, API keys, webhooks and tools pages pass axe (WCAG 2 A/AA), on a desktop and a phone', async ({
  page,
  request,
}) => {
  // Twenty-one axe analyses, each about 1.5 s of browser work on this machine: more than the default
  // 30 s a test gets, which it once overran by 0.3 s.
  test.setTimeout(90_000);
  const { decision } = await raiseAndAsk(
    request,
    {
      title: 'Accessible?',
      description: 'Check it.',
      shape_context: {
        options: [
          { id: 'a', label: 'A' },
          { id: 'b', label: 'B' },
        ],
      },
    },
    { recommended_option_id: 'a' },
  );
  const work = await request.fetch('/api/v1/work', {
    method: 'POST',
    headers: { Authorization: `Bearer ${fixture().apiKey}`, 'Content-Type': 'application/json' },
    data: JSON.stringify({ title: 'An accessible task' }),
  });
  const taskId = (await work.json()).data.taskId as string;
  // Settings → Tools with a server, its tools and a refused call in it (the server removed afterwards).
  const upstream = await startUpstream({ lookup: {}, erase: {} });
  const registered = await agent(request, 'POST', '/mcp-servers', {
    name: 'a11y-tools',
    url: upstream.url,
    headers: { Authorization: 'Bearer a11y' },
    guards: [{ tool: 'erase', mode: 'deny' }],
  });
  expect(registered.status).toBe(201);
  const client = new Client({ name: 'e2e-accessibility', version: '1' });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', APP_ORIGIN), {
        requestInit: { headers: { Authorization: `Bearer ${fixture().apiKey}` } },
      }),
    );
    expect((await client.callTool({ name: 'a11y-tools__erase', arguments: {} })).isError).toBe(true);
    await checkPages(page, [`/decisions/${decision.id}`, `/tasks/${taskId}`]);
  } finally {
    await client.close();
    await request.delete(`/api/v1/mcp-servers/${registered.body.data.id}`, { headers: { Authorization: `Bearer ${fixture().apiKey}` } });
    await upstream.close();
  }
});

/** Signs the owner in and runs axe on the sign-in page and every page a human uses, at a desktop's and a phone's width. */
async function checkPages(page: Page, resources: string[]) {
  await page.goto('/signin');
  expect(await violations(page)).toEqual([]);
  await signIn(page, fixture().users.owner);
  for (const size of [
    { width: 1200, height: 800 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(size);
    for (const path of [
      '/decisions',
      ...resources,
      '/ledger',
      '/settings/api-keys',
      '/settings/webhooks',
      '/settings/tools',
      '/settings/members',
      '/settings/account',
      '/workspaces/new',
    ]) {
      await page.goto(path);
      expect(await violations(page), `${path} at ${size.width}px`).toEqual([]);
    }
  }
}

test('a decision can be ruled on with the keyboard alone', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: 'Keyboard only' });
  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  await page.getByLabel('Note (optional)').focus();
  await page.keyboard.type('Typed, not clicked.');
  await page.keyboard.press('Tab');
  await expect(page.getByRole('button', { name: 'Approve', exact: true })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('button', { name: 'Confirm approve' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('status')).toContainText('Approved');
});
