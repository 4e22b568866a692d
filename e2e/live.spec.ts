/**
 * The live pages: the inbox and a decision page follow the ledger through the session's event
 * stream, without a reload; the tab title counts pending decisions.
 */
import { expect, test, type Page } from '@playwright/test';
import { agent, fixture, raiseAndAsk, signIn } from './support';

const TITLE = 'Accountable Work Service';

async function pendingInTitle(page: Page): Promise<number> {
  const match = /^\((\d+)\) /.exec(await page.title());
  return match ? Number(match[1]) : 0;
}

/** Marks the document: a reload would lose the mark. */
async function mark(page: Page): Promise<void> {
  await page.evaluate(() => ((window as unknown as { __drawn: boolean }).__drawn = true));
}
async function stillMarked(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as unknown as { __drawn?: boolean }).__drawn === true);
}

test('a decision raised through the API appears in an open inbox within a second, and the title counts it', async ({ page, request }) => {
  await signIn(page, fixture().users.approver);
  // The title counts what the inbox counts.
  const before = Number(
    (await page
      .getByRole('list', { name: 'Counts' })
      .getByText(/\d+ pending/)
      .textContent())!.split(' ')[0],
  );
  expect(await pendingInTitle(page)).toBe(before);
  await mark(page);
  // The page's stream is open before the agent acts.
  await page.waitForTimeout(500);

  const title = `Live ${Date.now()}: renew the certificate?`;
  const raised = await agent(request, 'POST', '/decisions', { workspace_id: fixture().workspaceId, title, urgency: 'urgent' });
  expect(raised.status).toBe(201);
  // Within a second of the agent's answer, with no reload.
  await expect(page.getByRole('link', { name: new RegExp(title.replace(/[?]/g, '\\?')) })).toBeVisible({ timeout: 1_000 });
  await expect(page).toHaveTitle(`(${before + 1}) ${TITLE}`);
  expect(await stillMarked(page)).toBe(true);
});

test('a ruling made in another browser shows at once on an open decision page', async ({ page, browser, request }) => {
  const { decision } = await raiseAndAsk(request, { title: `Live ruling ${Date.now()}`, urgency: 'standard' });
  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  await expect(page.getByRole('button', { name: 'Approve', exact: true })).toBeVisible();
  await mark(page);
  await page.waitForTimeout(500);

  const elsewhere = await browser.newContext();
  try {
    const other = await elsewhere.newPage();
    await signIn(other, fixture().users.owner);
    await other.goto(`/decisions/${decision.id}`);
    await other.getByLabel('Note (optional)').fill('Decided elsewhere.');
    await other.getByRole('button', { name: 'Decline' }).click();
    await other.getByRole('button', { name: 'Confirm decline' }).click();
    await expect(other.getByRole('status')).toContainText('Declined');
  } finally {
    await elsewhere.close();
  }
  await expect(page.getByTestId('resolution')).toContainText('Decided elsewhere.', { timeout: 1_500 });
  await expect(page.getByRole('button', { name: 'Approve', exact: true })).toHaveCount(0);
  expect(await stillMarked(page)).toBe(true);
});
