/**
 * Decision policies where the people who rule meet them: two approvers in two browser
 * contexts meet a quorum of two while the agent polls; a member the policy does not ask is refused;
 * a decline ends a 2-of-3 at once. Through the real server in Chromium.
 */
import { expect, test, type Browser, type Page } from '@playwright/test';
import { agent, APP_ORIGIN, fixture, signIn } from './support';

async function signedIn(browser: Browser, email: string): Promise<Page> {
  const context = await browser.newContext({ baseURL: APP_ORIGIN });
  const page = await context.newPage();
  await signIn(page, email);
  return page;
}

async function approve(page: Page, id: string) {
  await page.goto(`/decisions/${id}`);
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
}

async function raise(request: Parameters<typeof agent>[0], title: string, policy: Record<string, unknown>) {
  const raised = await agent(request, 'POST', '/decisions', { workspace_id: fixture().workspaceId, title, policy });
  expect(raised.status, JSON.stringify(raised.body)).toBe(201);
  return raised.body.decision as { id: string };
}

test('two approvers, two browsers: pending with one approval, then approved; the owner the policy leaves out gets 403', async ({
  browser,
  request,
}) => {
  const title = `Wire 12,000 EUR to Acme ${Date.now()}`;
  const decision = await raise(request, title, { approvals_required: 2, approvers: { roles: ['approver'] } });
  const avery = await signedIn(browser, fixture().users.approver);
  const quinn = await signedIn(browser, fixture().users.secondApprover);
  const olive = await signedIn(browser, fixture().users.owner);

  // Both approvers find it under "Needs you"; the owner, whom the policy does not ask, under "Waiting on others".
  await expect(avery.getByRole('list', { name: 'Needs you' }).getByRole('link', { name: new RegExp(title) })).toBeVisible();
  await expect(olive.getByRole('list', { name: 'Waiting on others' }).getByRole('link', { name: new RegExp(title) })).toBeVisible();

  await approve(avery, decision.id);
  await expect(avery.getByRole('status')).toHaveText('Your ruling is recorded; the decision waits for the others its policy asks.');
  await expect(avery.getByTestId('policy-words')).toHaveText('2 approvals from any approver; any decline declines.');
  await expect(avery.getByTestId('approvals')).toContainText('Approved by Avery Approver');
  let polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision.status).toBe('pending');
  expect(polled.body.decision.approvals).toHaveLength(1);

  // The approver who has approved now finds it waiting on others; the second one sees whose turn it is.
  await avery.goto('/decisions');
  await expect(avery.getByRole('list', { name: 'Waiting on others' }).getByRole('link', { name: new RegExp(title) })).toBeVisible();
  await quinn.goto(`/decisions/${decision.id}`);
  await expect(quinn.getByTestId('turn')).toHaveText('Waiting for 1 of 2 approvals — including yours.');

  // The owner: no ruling buttons on the page, and the API refuses the ruling.
  await olive.goto(`/decisions/${decision.id}`);
  await expect(olive.getByText('Its policy does not ask you to rule on this decision.')).toBeVisible();
  await expect(olive.getByRole('button', { name: 'Approve', exact: true })).toHaveCount(0);
  const refused = await olive.request.post(`/api/v1/decisions/${decision.id}/approve`, { headers: { Origin: APP_ORIGIN }, data: {} });
  expect(refused.status()).toBe(403);
  expect((await refused.json()).error.code).toBe('forbidden');

  await approve(quinn, decision.id);
  await expect(quinn.getByRole('status')).toContainText('Approved');
  polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision.status).toBe('approved');
  expect(polled.body.decision.approvals.map((a: { name: string }) => a.name)).toEqual(['Avery Approver', 'Quinn Quorum']);
  expect(polled.body.decision.history.map((h: { event_type: string }) => h.event_type)).toEqual([
    'decision.created',
    'decision.approval_recorded',
    'decision.approval_recorded',
    'decision.approved',
  ]);
  for (const page of [avery, quinn, olive]) await page.context().close();
});

test('a decline ends a 2-of-3 at once (veto)', async ({ browser, request }) => {
  const decision = await raise(request, `Delete the staging database ${Date.now()}`, { approvals_required: 2 });
  const avery = await signedIn(browser, fixture().users.approver);
  const quinn = await signedIn(browser, fixture().users.secondApprover);
  await approve(avery, decision.id);
  await expect(avery.getByRole('status')).toContainText('Your ruling is recorded');

  await quinn.goto(`/decisions/${decision.id}`);
  await quinn.getByRole('button', { name: 'Decline' }).click();
  await quinn.getByRole('button', { name: 'Confirm decline' }).click();
  await expect(quinn.getByRole('status')).toContainText('Declined');
  const polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision).toMatchObject({ status: 'declined', resolution: { resolved_by_name: 'Quinn Quorum' } });
  expect(polled.body.decision.approvals).toHaveLength(1);
  for (const page of [avery, quinn]) await page.context().close();
});

test('escalation: after 2 s the decision moves to “Needs you” in the escalation group’s open inbox, without a reload', async ({
  browser,
  request,
}) => {
  const title = `Restart the payments cluster ${Date.now()}`;
  const quinn = await signedIn(browser, fixture().users.secondApprover);
  await raise(request, title, {
    approvers: { user_ids: [fixture().userIds.approver] },
    escalation: [{ after_seconds: 2, notify: { user_ids: [fixture().userIds.secondApprover] } }],
  });
  const link = (list: string) => quinn.getByRole('list', { name: list }).getByRole('link', { name: new RegExp(title) });
  await expect(link('Waiting on others')).toBeVisible({ timeout: 15_000 });
  await expect(link('Needs you')).toBeVisible({ timeout: 8_000 });
  await link('Needs you').click();
  await expect(quinn.getByTestId('policy-words')).toContainText('after 2 seconds unruled, escalates to Quinn Quorum');
  await expect(quinn.getByRole('button', { name: 'Approve', exact: true })).toBeVisible();
  await quinn.context().close();
});

test('away: Avery gives her rulings to Quinn in /settings/account; Quinn approves for her; back, they are hers again', async ({
  browser,
  request,
}) => {
  const avery = await signedIn(browser, fixture().users.approver);
  const quinn = await signedIn(browser, fixture().users.secondApprover);
  await avery.goto('/settings/account');
  const tomorrow = new Date(Date.now() + 86_400_000);
  const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  await avery.getByLabel('Away until').fill(local);
  await avery.getByLabel('My rulings go to').selectOption({ label: 'Quinn Quorum' });
  await avery.getByRole('button', { name: 'Save' }).click();
  await expect(avery.getByTestId('away')).toContainText('your rulings go to Quinn Quorum');

  const decision = await raise(request, `Renew the TLS certificate ${Date.now()}`, {
    approvers: { user_ids: [fixture().userIds.approver] },
  });
  await quinn.goto(`/decisions/${decision.id}`);
  await expect(quinn.getByTestId('acting-for')).toContainText('You rule for Avery Approver');
  await approve(quinn, decision.id);
  await expect(quinn.getByRole('status')).toContainText('Approved');
  const polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision.approvals).toMatchObject([
    { approver_id: fixture().userIds.secondApprover, acting_for: fixture().userIds.approver },
  ]);

  await avery.getByRole('button', { name: 'I am back' }).click();
  await expect(avery.getByLabel('Away until')).toBeVisible();
  const next = await raise(request, `Renew the other certificate ${Date.now()}`, { approvers: { user_ids: [fixture().userIds.approver] } });
  await quinn.goto(`/decisions/${next.id}`);
  await expect(quinn.getByText('Its policy does not ask you to rule on this decision.')).toBeVisible();
  for (const page of [avery, quinn]) await page.context().close();
});
