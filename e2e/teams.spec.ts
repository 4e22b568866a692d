/**
 * Teams in the browser: an owner invites an approver, who joins from the link in a second browser,
 * sees only that workspace and rules; removed, their next page load is out of it. A person in two
 * workspaces switches between them and each list shows only its own decisions; a deep link opens
 * its decision's workspace after one click, and is a 404 for anyone else. A GET to the switch
 * changes nothing (a link or image on another site cannot switch anyone). What waits in every
 * workspace shows in the switcher and in the inbox's "All workspaces".
 */
import { randomUUID } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { APP_ORIGIN, agent, fixture, raiseBlocking, signIn } from './support';

const PASSWORD = 'a long new password 42';

async function raise(
  request: import('@playwright/test').APIRequestContext,
  title: string,
  key = fixture().apiKey,
  workspaceId = fixture().workspaceId,
) {
  const res = await request.post('/api/v1/decisions', {
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    data: JSON.stringify({ workspace_id: workspaceId, title }),
  });
  expect(res.status()).toBe(201);
  return (await res.json()).decision as { id: string };
}

async function approve(page: Page, decisionId: string) {
  await page.goto(`/decisions/${decisionId}`);
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');
}

test('an owner invites an approver, who joins from the link, rules, and is out at the next page load once removed', async ({
  page,
  browser,
  request,
}) => {
  const email = `newbie-${randomUUID().slice(0, 8)}@e2e.test`;
  await signIn(page, fixture().users.owner);
  await page.getByRole('link', { name: 'Members' }).click();
  await expect(page).toHaveURL(/\/settings\/members$/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Role', { exact: true }).selectOption('approver');
  await page.getByRole('button', { name: 'Invite' }).click();
  const link = (await page.getByTestId('invitation-link').textContent())!.trim();
  expect(link).toMatch(new RegExp(`^${APP_ORIGIN}/invite/awi_[A-Za-z0-9_-]{43}$`));
  await page.getByRole('button', { name: 'I have sent it' }).click();
  await expect(page.getByTestId('invitation-link')).toHaveCount(0);
  await expect(page.getByRole('row', { name: new RegExp(email) })).toContainText('approver');

  // The invitee, in a browser of their own.
  const theirs = await browser.newContext();
  const invitee = await theirs.newPage();
  await invitee.goto(link);
  await expect(invitee.getByRole('heading', { level: 1 })).toHaveText('Join e2e');
  await invitee.getByLabel('Your name').fill('Nell Newbie');
  await invitee.getByLabel('Password (at least 12 characters)').fill(PASSWORD);
  await invitee.getByLabel('Password again').fill(PASSWORD);
  await invitee.getByRole('button', { name: 'Create account and join' }).click();
  await expect(invitee).toHaveURL(/\/decisions$/);
  await expect(invitee.getByLabel('Workspace')).toHaveText('e2e');
  await expect(invitee.getByText('In e2e you are approver')).toBeVisible();

  const mine = await raise(request, `For the newcomer ${randomUUID().slice(0, 6)}`);
  await approve(invitee, mine.id);
  expect((await agent(request, 'GET', `/decisions/${mine.id}`)).body.decision.resolution.resolved_by_name).toBe('Nell Newbie');

  // The link worked once.
  const again = await browser.newContext();
  const second = await again.newPage();
  expect((await second.goto(link))!.status()).toBe(404);
  await again.close();

  // Removed: the member's very next page load is outside the workspace.
  await page.reload();
  await page.getByTestId(`member-${email}`).getByRole('button', { name: 'Remove' }).click();
  await page.getByTestId(`member-${email}`).getByRole('button', { name: 'Confirm remove' }).click();
  await expect(page.getByRole('status')).toContainText(`Removed ${email}`);
  // On the decision's page: the next load is a 404; the list says they are in no workspace.
  expect((await invitee.reload())!.status()).toBe(404);
  await expect(invitee.getByRole('heading', { level: 1 })).toHaveText('Not found');
  await invitee.goto('/decisions');
  await expect(invitee.getByRole('heading', { level: 1 })).toHaveText('No workspace');
  await theirs.close();
});

test('a person in two workspaces switches between them, each list shows only its own, deep links switch; others get 404', async ({
  page,
  browser,
  request,
}) => {
  const name = `Second ${randomUUID().slice(0, 6)}`;
  await signIn(page, fixture().users.owner);
  const e2eTitle = `Only in e2e ${randomUUID().slice(0, 6)}`;
  await raise(request, e2eTitle);

  await page.goto('/workspaces/new');
  await page.getByLabel('Name').fill(name);
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await expect(page).toHaveURL(/\/decisions$/);
  await expect(page.getByLabel('Current workspace')).toHaveValue(/[0-9a-f-]{36}/);
  await expect(page.getByLabel('Current workspace').locator('option:checked')).toHaveText(`${name} (owner)`);
  await expect(page.getByText('No decisions match')).toBeVisible();
  const current = page.getByLabel('Current workspace').locator('option:checked');

  // A key for the new workspace, from its API keys page, and a decision raised with it.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByLabel('New key name').fill('second agent');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  const workspace = await request.get('/api/v1/workspace', { headers: { Authorization: `Bearer ${key}` } });
  const secondId = (await workspace.json()).data.id as string;
  const inSecond = await raise(request, `Only in ${name}`, key, secondId);

  await page.goto('/decisions');
  await expect(page.getByRole('link', { name: new RegExp(`Only in ${name}`) })).toBeVisible();
  await expect(page.getByRole('link', { name: new RegExp(e2eTitle) })).toHaveCount(0);

  await page.getByLabel('Current workspace').selectOption(fixture().workspaceId);
  await expect(current).toHaveText(/^e2e \(owner\)/);
  await expect(page.getByRole('link', { name: new RegExp(`Only in ${name}`) })).toHaveCount(0);
  await expect(page.getByRole('link', { name: new RegExp(e2eTitle) })).toBeVisible();

  // A deep link into the second workspace: one click switches to it and shows the decision.
  await page.goto(`/decisions/${inSecond.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Switch to ${name}?`);
  await expect(current).toHaveText(/^e2e \(owner\)/);
  await page.getByRole('button', { name: `Switch to ${name} to see this` }).click();
  await expect(page).toHaveURL(new RegExp(`/decisions/${inSecond.id}$`));
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Only in ${name}`);
  await expect(current).toHaveText(new RegExp(`^${name} \\(owner\\)`));

  // Someone of neither workspace: 404, not the other workspace's data.
  const context = await browser.newContext();
  const stranger = await context.newPage();
  await signIn(stranger, fixture().users.stranger);
  const res = await stranger.goto(`/decisions/${inSecond.id}`);
  expect(res!.status()).toBe(404);
  await expect(stranger.getByText(`Only in ${name}`)).toHaveCount(0);
  await context.close();
});

/** Signs in as the owner and creates a workspace, which becomes current; returns its name. */
async function ownerWithSecondWorkspace(page: Page): Promise<string> {
  const name = `Side ${randomUUID().slice(0, 6)}`;
  await signIn(page, fixture().users.owner);
  await page.goto('/workspaces/new');
  await page.getByLabel('Name').fill(name);
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await expect(page).toHaveURL(/\/decisions$/);
  await expect(page.getByLabel('Current workspace').locator('option:checked')).toHaveText(`${name} (owner)`);
  return name;
}

const workspaceCookie = async (page: Page) => (await page.context().cookies()).find((c) => c.name === 'aws-workspace')?.value;

test('a GET to /workspaces/switch changes nothing, from this site or another; only the button (a POST) switches', async ({ page }) => {
  const name = await ownerWithSecondWorkspace(page);
  const before = await workspaceCookie(page);
  expect(before).toMatch(/^[0-9a-f-]{36}$/);
  const to = fixture().workspaceId;
  const link = `${APP_ORIGIN}/workspaces/switch?${new URLSearchParams({ to, return: '/ledger' })}`;

  // Asked directly: no cookie, a redirect to the page that asks.
  const direct = await page.request.get(link, { maxRedirects: 0 });
  expect(direct.status()).toBe(303);
  expect(direct.headers()['set-cookie'] ?? '').not.toContain('aws-workspace');
  expect(new URL(direct.headers().location!, APP_ORIGIN).pathname).toBe('/workspaces/switch/confirm');

  // Another site: an image of the link, then a link to it followed at the top level (where the
  // browser does send the session cookie).
  await page.route('https://evil.example/**', (route) =>
    route.fulfill({
      contentType: 'text/html',
      body: `<img src="${link}" alt=""><a id="go" href="${link}">Win a prize</a>`,
    }),
  );
  await page.goto('https://evil.example/');
  await page.waitForLoadState('networkidle');
  expect(await workspaceCookie(page)).toBe(before);
  await page.click('#go');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Switch to e2e?');
  expect(await workspaceCookie(page)).toBe(before);
  await expect(page.getByLabel('Current workspace').locator('option:checked')).toHaveText(new RegExp(`^${name} \\(owner\\)`));

  // The person decides: one click, and the page they were sent to, in that workspace.
  await page.getByRole('button', { name: 'Switch to e2e to see this' }).click();
  await expect(page).toHaveURL(/\/ledger$/);
  expect(await workspaceCookie(page)).toBe(to);
  await expect(page.getByLabel('Current workspace').locator('option:checked')).toHaveText(/^e2e \(owner\)/);
});

test('a blocking decision waiting in another workspace shows in the switcher and in the inbox of all workspaces, and opens in one click', async ({
  page,
  request,
}) => {
  const title = `Blocking in e2e ${randomUUID().slice(0, 6)}`;
  const decisionId = await raiseBlocking(request, `Blocked elsewhere ${randomUUID().slice(0, 6)}`, title);
  const name = await ownerWithSecondWorkspace(page);

  // The switcher says what waits in each workspace; the new one has nothing.
  const e2eOption = page.getByLabel('Current workspace').locator(`option[value="${fixture().workspaceId}"]`);
  await expect(e2eOption).toHaveText(/^e2e \(owner\) · \d+ pending, \d+ blocking$/);
  await expect(page.getByLabel('Current workspace').locator('option:checked')).toHaveText(`${name} (owner)`);

  // This workspace's inbox is empty, and says where decisions wait.
  await expect(page.getByText('No decisions match')).toBeVisible();
  await expect(page.getByRole('note')).toContainText(/Also waiting in your other workspaces: e2e · \d+ pending, \d+ blocking/);
  await page.getByRole('link', { name: 'See all workspaces' }).click();
  await expect(page).toHaveURL(/\/decisions\?view=all$/);
  const all = page.getByRole('list', { name: 'Decisions in all workspaces' });
  const item = all.getByRole('listitem').filter({ hasText: title });
  await expect(item).toContainText('e2e');
  await expect(item).toContainText('blocking');

  // One click: that workspace becomes current and the decision opens.
  await item.getByRole('button').click();
  await expect(page).toHaveURL(new RegExp(`/decisions/${decisionId}$`));
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(title);
  await expect(page.getByLabel('Current workspace').locator('option:checked')).toHaveText(/^e2e \(owner\)/);
});
