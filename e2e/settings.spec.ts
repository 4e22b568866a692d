/**
 * The settings pages' forms, as a person meets them on a laptop: fields at full size with short
 * labels, a shown-once box in the page's font, every destructive step confirmed on the page (never
 * by the browser's confirm()), "Leave" explained instead of offered to a workspace's only owner,
 * and a header on one row with two workspaces, their pending counts included.
 */
import { randomUUID } from 'node:crypto';
import { expect, test, type Locator, type Page } from '@playwright/test';
import { agent, fixture, signIn } from './support';

test.use({ viewport: { width: 1280, height: 800 } });

/** Every dialog the browser opens (confirm(), alert()): dismissed, and remembered for the test to refuse. */
function dialogsOf(page: Page): string[] {
  const seen: string[] = [];
  page.on('dialog', (d) => {
    seen.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  return seen;
}

/** A text field drawn like every other: the page's font size, room around the text, rounded. */
async function expectFullSizeField(field: Locator) {
  const look = await field.evaluate((el) => {
    const style = getComputedStyle(el);
    return { fontSize: style.fontSize, radius: style.borderRadius, height: el.getBoundingClientRect().height };
  });
  expect(look.fontSize).toBe(await field.page().evaluate(() => getComputedStyle(document.body).fontSize));
  expect(look.radius).toBe('6px');
  expect(look.height).toBeGreaterThanOrEqual(36);
}

test('the webhook form and the ledger filters are full-size fields, and "Event types" is one line with its hint as the description', async ({
  page,
}) => {
  await signIn(page, fixture().users.owner);
  await page.goto('/settings/webhooks');
  const form = page.getByRole('form', { name: 'New endpoint' });
  await expectFullSizeField(form.getByLabel('Endpoint URL'));
  const types = form.getByLabel('Event types');
  await expectFullSizeField(types);
  await expect(types).toHaveAccessibleName('Event types');
  await expect(types).toHaveAccessibleDescription(/prefix like decision\.\* takes every event under it/);
  const label = form.locator('label', { hasText: 'Event types' });
  const lineHeight = await label.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight));
  expect((await label.boundingBox())!.height).toBeLessThan(lineHeight * 1.5);

  await page.goto('/ledger');
  await expectFullSizeField(page.getByLabel('Event type'));
  const aggregate = page.getByLabel('Aggregate id');
  await expectFullSizeField(aggregate);
  // Wide enough for the id it asks for.
  await aggregate.fill(randomUUID());
  expect(await aggregate.evaluate((el: HTMLInputElement) => el.scrollWidth <= el.clientWidth)).toBe(true);
});

test('an owner sees how much of the workspace’s quota its stored artifact bytes use', async ({ page }) => {
  await signIn(page, fixture().users.owner);
  await page.goto('/settings/members');
  await expect(page.getByTestId('artifact-storage')).toContainText(/^[0-9.]+ (bytes|KiB|MiB|GiB) used of 1 GiB$/);
  await expect(page.getByRole('meter', { name: 'Stored artifact bytes used of the quota' })).toBeVisible();
});

test('the invitation box reads in the page’s font, buttons included; only the link is in code type', async ({ page }) => {
  await signIn(page, fixture().users.owner);
  await page.goto('/settings/members');
  await page.getByLabel('Email').fill(`box-${randomUUID().slice(0, 8)}@e2e.test`);
  await page.getByRole('button', { name: 'Invite' }).click();
  const box = page.getByRole('region', { name: 'Invitation link' });
  const font = (l: Locator) => l.evaluate((el) => getComputedStyle(el).fontFamily);
  const body = await page.evaluate(() => getComputedStyle(document.body).fontFamily);
  expect(await font(box.getByText('Send this link to'))).toBe(body);
  expect(await font(box.getByRole('button', { name: 'Copy link' }))).toBe(body);
  expect(await font(box.getByRole('button', { name: 'I have sent it' }))).toBe(body);
  expect(await font(page.getByTestId('invitation-link'))).toMatch(/monospace/);
});

test('revoking a key or an invitation and leaving a workspace are confirmed on the page, and "Go back" changes nothing', async ({
  page,
  browser,
}) => {
  const dialogs = dialogsOf(page);
  await signIn(page, fixture().users.owner);

  // A key: asked on the page, backed out of, then revoked.
  await page.goto('/settings/api-keys');
  const keyName = `revoke-me-${randomUUID().slice(0, 6)}`;
  await page.getByLabel('New key name').fill(keyName);
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('button', { name: 'I have saved it' }).click();
  const row = page.getByRole('row', { name: new RegExp(keyName) });
  await row.getByRole('button', { name: `Revoke ${keyName}` }).click();
  const ask = row.getByRole('group', { name: `Confirm: Revoke ${keyName}` });
  await expect(ask).toContainText(`Revoke ${keyName}`);
  await expect(ask).toContainText('Requests with it are refused at once.');
  await expect(ask.getByRole('button', { name: 'Confirm revoke' })).toBeFocused();
  await ask.getByRole('button', { name: 'Go back' }).click();
  await expect(ask).toHaveCount(0);
  await expect(row.getByRole('button', { name: `Revoke ${keyName}` })).toBeFocused();
  await expect(row).toContainText('Active');
  await row.getByRole('button', { name: `Revoke ${keyName}` }).click();
  await ask.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByRole('status')).toContainText(`Revoked the key “${keyName}”`);
  await expect(row).toContainText('Revoked');

  // An invitation that will not be used, and one that will.
  await page.goto('/settings/members');
  const unused = `unused-${randomUUID().slice(0, 8)}@e2e.test`;
  await page.getByLabel('Email').fill(unused);
  await page.getByRole('button', { name: 'Invite' }).click();
  await page.getByRole('button', { name: 'I have sent it' }).click();
  const invitation = page.getByRole('row', { name: new RegExp(unused) });
  await invitation.getByRole('button', { name: `Revoke the invitation for ${unused}` }).click();
  await invitation.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByRole('status')).toContainText(`Revoked the invitation for ${unused}`);
  await expect(invitation).toHaveCount(0);

  const email = `leaver-${randomUUID().slice(0, 8)}@e2e.test`;
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Role', { exact: true }).selectOption('viewer');
  await page.getByRole('button', { name: 'Invite' }).click();
  const link = (await page.getByTestId('invitation-link').textContent())!.trim();

  const theirs = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const leaver = await theirs.newPage();
  const theirDialogs = dialogsOf(leaver);
  await leaver.goto(link);
  await leaver.getByLabel('Your name').fill('Lee Leaver');
  await leaver.getByLabel('Password (at least 12 characters)').fill('a long new password 42');
  await leaver.getByLabel('Password again').fill('a long new password 42');
  await leaver.getByRole('button', { name: 'Create account and join' }).click();
  await expect(leaver).toHaveURL(/\/decisions$/);
  await leaver.goto('/settings/account');
  const membership = leaver.getByRole('row', { name: /e2e/ });
  await membership.getByRole('button', { name: 'Leave e2e' }).click();
  const leave = membership.getByRole('group', { name: 'Confirm: Leave e2e' });
  await expect(leave).toContainText('You lose access at once');
  await leave.getByRole('button', { name: 'Confirm leave' }).click();
  await expect(leaver.getByRole('status')).toContainText('You left e2e.');
  await expect(leaver.getByText('You are in no workspace.')).toBeVisible();
  await theirs.close();

  expect(dialogs).toEqual([]);
  expect(theirDialogs).toEqual([]);
});

test('a workspace’s only owner is told why they cannot leave it, instead of being offered "Leave"', async ({ page, browser }) => {
  await signIn(page, fixture().users.owner);
  await page.goto('/settings/account');
  const owned = page.getByRole('row', { name: /^e2e/ });
  await expect(owned).toContainText('Its only owner: make another member an owner before you leave.');
  await expect(owned.getByRole('button')).toHaveCount(0);

  // Anyone else is offered it.
  const context = await browser.newContext();
  const approver = await context.newPage();
  await signIn(approver, fixture().users.approver);
  await approver.goto('/settings/account');
  await expect(approver.getByRole('row', { name: /^e2e/ }).getByRole('button', { name: 'Leave e2e' })).toBeVisible();
  await context.close();
});

/** The header's brand, workspace, links and sign-out share one row (their middles within 4 px). */
async function expectHeaderOnOneRow(page: Page, path: string) {
  await page.goto(path);
  const header = page.locator('header.site-header');
  const parts = [header.getByRole('link', { name: 'Accountable Work Service' }), page.getByLabel('Current workspace')];
  for (const link of await header.getByRole('navigation', { name: 'Main' }).getByRole('link').all()) parts.push(link);
  parts.push(header.getByRole('button', { name: 'Sign out' }));
  const middles = await Promise.all(parts.map(async (p) => ((b) => b!.y + b!.height / 2)(await p.boundingBox())));
  for (const middle of middles) expect(Math.abs(middle - middles[0]!), path).toBeLessThan(4);
}

test('with two workspaces the header keeps to one row at 1280 px', async ({ page }) => {
  await signIn(page, fixture().users.stranger);
  await page.goto('/workspaces/new');
  await page.getByLabel('Name').fill(`Second of the stranger ${randomUUID().slice(0, 4)}`);
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await expect(page.getByLabel('Current workspace')).toBeVisible();

  for (const path of ['/decisions', '/settings/webhooks']) await expectHeaderOnOneRow(page, path);
});

test('with decisions waiting in another workspace, the switcher’s pending counts keep the header on one row at 1280 px', async ({
  page,
  request,
}) => {
  const work = await agent(request, 'POST', '/work', { title: `Waiting for the header ${randomUUID().slice(0, 6)}` });
  const raised = await agent(request, 'POST', '/decisions', {
    workspace_id: fixture().workspaceId,
    title: `Blocking while elsewhere ${randomUUID().slice(0, 6)}`,
    blocks_task: true,
    task_id: work.body.data.taskId,
  });
  expect(raised.status).toBe(201);
  await signIn(page, fixture().users.owner);
  await page.goto('/workspaces/new');
  await page.getByLabel('Name').fill(`Regional onboarding programme ${randomUUID().slice(0, 4)}`);
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await expect(page).toHaveURL(/\/decisions$/);
  await expect(page.getByLabel('Current workspace').locator(`option[value="${fixture().workspaceId}"]`)).toHaveText(
    /^e2e \(owner\) · \d+ pending, \d+ blocking$/,
  );

  // An owner's header has every link; the inbox of all workspaces too.
  for (const path of ['/decisions', '/decisions?view=all', '/settings/webhooks']) await expectHeaderOnOneRow(page, path);
});
