/**
 * The words a person meets: one name per thing (README, "Words we use"), plain words first and the
 * technical detail a click away, an API keys page that says each key's state and lets a new key be
 * copied once, and the small things a browser asks for (a favicon, a way back from the API reference).
 */
import { expect, test } from '@playwright/test';
import { agent, fixture, raiseAndAsk, signIn } from './support';

test('the header says Decisions for the decisions list; "Inbox" is only the initiative of unplaced work', async ({ page }) => {
  await signIn(page, fixture().users.approver);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByRole('link', { name: 'Decisions' })).toHaveAttribute('href', '/decisions');
  await expect(nav.getByText('Inbox')).toHaveCount(0);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Decisions');
});

test('a decision reads in plain words: its shape, who did what, and one thing called Cancel', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: 'Plain words please', shape: 'option_select' });
  await signIn(page, fixture().users.owner);
  await page.goto(`/decisions/${decision.id}`);
  // Only the default options (approve, decline): the question is yes or no.
  await expect(page.getByTitle('shape: option_select')).toHaveText('Approve or decline');
  await expect(page.getByText('option select')).toHaveCount(0);

  const history = page.getByRole('region', { name: 'History' });
  const raised = history.getByRole('listitem').first();
  await expect(raised).toContainText('Raised by an agent (key “e2e agent”)');
  // The ledger detail is one click away, not in the way.
  const hash = raised.locator('code', { hasText: 'sha256:' });
  await expect(hash).toBeHidden();
  await raised.getByText('Ledger record').click();
  await expect(hash).toBeVisible();
  await expect(raised).toContainText('decision.created');
  await expect(history).not.toContainText('api_key #');

  // Backing out of a confirmation is "Go back"; "Cancel" is only ever the decision itself.
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  const confirm = page.getByRole('group', { name: 'Confirm ruling' });
  await expect(confirm.getByRole('button', { name: 'Go back' })).toBeVisible();
  const cancelButtons = page.getByRole('button', { name: /cancel/i });
  await expect(cancelButtons).toHaveCount(1);
  await expect(cancelButtons).toHaveText('Cancel this decision…');
  await expect(page.getByRole('region', { name: 'No longer needed?' })).toContainText('the agent sees it cancelled');
  await confirm.getByRole('button', { name: 'Go back' }).click();
  await expect(confirm).toHaveCount(0);
});

test('API keys: the state in its column, a copy button, and the new key gone once copied', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await signIn(page, fixture().users.owner);
  await page.goto('/settings/api-keys');
  await page.getByLabel('New key name').fill('copied-once');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = (await page.getByTestId('new-key').textContent())!.trim();
  expect(secret).toMatch(/^awk_/);
  const row = page.getByRole('row', { name: /copied-once/ });
  const stateColumn = await page.getByRole('columnheader').allTextContents();
  const stateIndex = stateColumn.indexOf('State');
  await expect(row.getByRole('cell').nth(stateIndex)).toHaveText('Active');

  await page.getByRole('button', { name: 'Copy key' }).click();
  await expect(page.getByRole('status')).toContainText('Copied the key “copied-once”');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
  await expect(page.getByTestId('new-key')).toHaveCount(0);
  await expect(page.getByText(secret)).toHaveCount(0);

  await row.getByRole('button', { name: 'Revoke copied-once' }).click();
  await row.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(row.getByRole('cell').nth(stateIndex)).toContainText('Revoked');
  await expect(row.getByRole('button', { name: /Revoke/ })).toHaveCount(0);
});

test('a favicon on every page, and a way back to the app from the API reference', async ({ page, request }) => {
  const icon = await request.get('/favicon.ico');
  expect(icon.status()).toBe(200);
  expect(icon.headers()['content-type']).toMatch(/^image\//);
  const svg = await request.get('/icon.svg');
  expect(svg.status()).toBe(200);
  expect(svg.headers()['content-type']).toMatch(/^image\/svg\+xml/);

  const failed: string[] = [];
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  await page.goto('/signin');
  await expect(page.locator('link[rel="icon"]').first()).toHaveAttribute('href', /favicon\.ico|icon\.svg/);
  await page.goto('/docs/api');
  await expect(page.getByRole('link', { name: '← Accountable Work Service' })).toHaveAttribute('href', '/');
  await expect(page.locator('.swagger-ui .info .title')).toContainText('Accountable Work Service API');
  await expect(page.getByText(/error error/i)).toHaveCount(0);
  expect(failed).toEqual([]);
});

test('counts read in the singular for one: a run with one checkpoint, a decision asked once', async ({ page, request }) => {
  const work = await agent(request, 'POST', '/work', { title: `One checkpoint ${Date.now()}` });
  const taskId = work.body.data.taskId as string;
  const run = await agent(request, 'POST', '/runs', { task_id: taskId, agent_id: 'words-agent' });
  expect((await agent(request, 'POST', `/runs/${run.body.data.runId}/checkpoints`, { label: 'first' })).status).toBe(201);
  const { decision } = await raiseAndAsk(request, { title: `Asked once ${Date.now()}` });

  await signIn(page, fixture().users.owner);
  await page.goto(`/tasks/${taskId}`);
  await expect(page.getByRole('region', { name: 'Runs' })).toContainText('by words-agent, fence 1, 1 checkpoint, started');
  await page.goto(`/decisions/${decision.id}`);
  await expect(page.getByRole('region', { name: 'Attention' })).toContainText(/Asked\s*1 time, first/);
});

test('who did what is named the one way everywhere, and a task’s history says what happened', async ({ page, request }) => {
  const title = `Words history ${Date.now()}`;
  const work = await agent(request, 'POST', '/work', { title });
  const taskId = work.body.data.taskId as string;
  const { decision } = await raiseAndAsk(request, { title: `Who approved ${Date.now()}` });

  await signIn(page, fixture().users.owner);
  await page.goto(`/decisions/${decision.id}`);
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');
  const history = page.getByRole('region', { name: 'History' });
  await expect(history.getByRole('listitem').last()).toContainText('Approved by Olive Owner');
  // The ledger record names them the same way, the id beside the name (never "api_key <uuid>" alone).
  const raised = history.getByRole('listitem').first();
  await raised.getByText('Ledger record').click();
  await expect(raised.locator('dd').nth(1)).toHaveText(/^an agent \(key “e2e agent”\), [0-9a-f-]{36}$/);

  // The ledger: the member by name and the agent by its key's name, not "a member" / "an agent".
  await page.goto(`/ledger?aggregate=${decision.id}`);
  const rows = page.locator('table.ledger tbody tr');
  await expect(rows.first().locator('td').nth(1)).toContainText('Decision approved');
  await expect(rows.first().locator('td').nth(3)).toHaveText('Olive Owner');
  await expect(rows.last().locator('td').nth(1)).toContainText('Decision raised');
  await expect(rows.last().locator('td').nth(3)).toHaveText('an agent (key “e2e agent”)');

  // A task's history: sentences, not event types.
  await page.goto(`/tasks/${taskId}`);
  const taskHistory = page.getByRole('region', { name: 'History' });
  await expect(taskHistory.getByRole('listitem').first()).toContainText('Created by an agent (key “e2e agent”)');
  await expect(taskHistory).not.toContainText('work.created');
  await expect(taskHistory).not.toContainText('api_key');
});
