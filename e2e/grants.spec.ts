/**
 * Rulings that bind, where people meet them: the decision page shows the exact action before the
 * ruling buttons, an approver changes an editable action's arguments and approves, and the grant
 * the agent reads verifies with the workspace's JWKS (jose, as a tool server would) and carries
 * the edited digest. And links cannot decide: a mail scanner that opens the decision link and every
 * link on its page, with the approver's cookies, rules nothing. Through the real server in Chromium.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { expect, test } from '@playwright/test';
import { agent, fixture, raiseAndAsk, signIn } from './support';

const digest = (value: unknown) => `sha256:${createHash('sha256').update(canonicalize(value)!).digest('hex')}`;

test('the page shows the action; an approver edits its arguments and approves; the grant carries the edited digest', async ({
  page,
  request,
}) => {
  const work = await agent(request, 'POST', '/work', { title: 'Rotate the API credentials' });
  const taskId: string = work.body.data.taskId;
  const action = {
    tool: 'rotate_credentials',
    arguments: { service: 'billing', notify: ['ops@example.com'], grace_hours: 24 },
    target: { type: 'task', id: taskId, version: work.body.data.aggregateVersion },
  };
  const { decision } = await raiseAndAsk(request, { title: 'Rotate the billing credentials?', action, editable: true });

  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  const panel = page.getByRole('region', { name: 'The action' });
  await expect(panel.getByTestId('action-tool')).toHaveText('rotate_credentials');
  await expect(panel.getByRole('definition').filter({ hasText: 'billing' })).toBeVisible();
  await expect(panel.getByRole('link', { name: 'the task' })).toHaveAttribute('href', `/tasks/${taskId}`);
  await expect(panel).toContainText(digest(action));

  const edited = { service: 'billing', notify: ['ops@example.com'], grace_hours: 2 };
  const box = page.getByLabel('Arguments to approve (JSON)');
  await box.fill('{ not json');
  await expect(page.getByText('This is not valid JSON.')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Approve', exact: true })).toBeDisabled();
  await box.fill(JSON.stringify(edited, null, 2));
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await expect(page.getByText('with the arguments as you changed them')).toBeVisible();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');
  await page.reload();
  await expect(page.getByRole('heading', { name: 'Arguments as approved' })).toBeVisible();
  await expect(page.getByTestId('grant')).toContainText('unused');

  const polled = (await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision;
  const approved = { ...action, arguments: edited };
  expect(polled.approved_action).toEqual(approved);
  const jwks = await request.get(`/api/v1/workspaces/${fixture().workspaceId}/jwks.json`);
  const { payload } = await jwtVerify(polled.grant.token, createLocalJWKSet(await jwks.json()), { algorithms: ['EdDSA'] });
  expect(payload.act).toBe(digest(approved));
  expect(payload.sub).toBe(decision.id);

  const used = await agent(request, 'POST', '/grants/consume', { token: polled.grant.token, action_digest: digest(approved) });
  expect(used.status).toBe(200);
  const again = await agent(request, 'POST', '/grants/consume', { token: polled.grant.token, action_digest: digest(approved) });
  expect(again.body.error.code).toBe('grant_used');
  await page.reload();
  await expect(page.getByTestId('grant')).toContainText('used');
});

test('a mail scanner that opens the decision link and every link on it, with the approver’s cookies, rules nothing', async ({
  page,
  request,
}) => {
  const { decision, attention } = await raiseAndAsk(request, {
    title: 'Send the quarterly numbers to the board?',
    action: { tool: 'send_email', arguments: { to: 'board@example.com' } },
  });
  const before = (await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision.history.length;
  await signIn(page, fixture().users.approver);
  // The scanner fetches as a prefetch would, with the browser's cookies: the page, then every link on it.
  const scanner = page.context().request;
  const headers = { Purpose: 'prefetch', 'Sec-Purpose': 'prefetch', 'User-Agent': 'SafeLinks-Scanner/1.0' };
  const landing = await scanner.get(attention.resolve_url, { headers });
  expect(landing.status()).toBe(200);
  const html = await landing.text();
  expect(html).toContain('Send the quarterly numbers to the board?');
  const links = [...html.matchAll(/href="([^"#]+)"/g)].map((m) => new URL(m[1]!.replaceAll('&amp;', '&'), attention.resolve_url).href);
  expect(links.length).toBeGreaterThan(5);
  const guesses = ['approve', 'decline', 'cancel'].flatMap((verb) => [
    `${attention.resolve_url}/${verb}`,
    new URL(`/api/v1/decisions/${decision.id}/${verb}`, attention.resolve_url).href,
  ]);
  for (const url of [...new Set([...links, ...guesses])].filter((u) => u.startsWith(new URL(attention.resolve_url).origin))) {
    const res = await scanner.get(url, { headers, maxRedirects: 5 });
    expect(res.status(), url).toBeLessThan(500);
    await scanner.head(url, { headers });
  }
  const after = (await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision;
  expect(after.status).toBe('pending');
  expect(after.grant).toBeNull();
  expect(after.history).toHaveLength(before);
});

test('a decision whose task changed since it was raised warns the approver, who declines it as stale', async ({ page, request }) => {
  const work = await agent(request, 'POST', '/work', { title: 'Archive the old reports' });
  const taskId: string = work.body.data.taskId;
  const raisedAt: number = work.body.data.aggregateVersion;
  const action = { tool: 'archive_reports', arguments: { older_than_days: 90 }, target: { type: 'task', id: taskId, version: raisedAt } };
  const { decision } = await raiseAndAsk(request, { title: 'Archive the reports older than 90 days?', action });

  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  // As raised: nothing to warn of.
  await expect(page.getByRole('button', { name: 'Approve', exact: true })).toBeVisible();
  await expect(page.getByTestId('stale-target')).toHaveCount(0);

  // The task changes after the decision was raised.
  const changed = await request.fetch(`/api/v1/tasks/${taskId}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${fixture().apiKey}`, 'Content-Type': 'application/json', 'If-Match': `"${raisedAt}"` },
    data: JSON.stringify({ title: 'Archive the old reports (all of them)' }),
  });
  expect(changed.status()).toBe(200);
  const now = (await changed.json()).data.task.aggregateVersion as number;
  expect(now).not.toBe(raisedAt);

  await page.reload();
  await expect(page.getByTestId('stale-target')).toHaveText(
    `Approving gives a grant that cannot be used: the task is at version ${now} now, not ${raisedAt} as when this was raised. ` +
      'Decline it as stale, and the agent can raise it again for the task as it is.',
  );
  await page.getByRole('button', { name: 'Decline as stale' }).click();
  await page.getByRole('button', { name: 'Confirm decline' }).click();
  await expect(page.getByRole('status')).toContainText('Declined');

  const ruled = (await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision;
  expect(ruled.status).toBe('declined');
  expect(ruled.resolution.note).toBe(
    `Stale: the task is at version ${now} now, not ${raisedAt} as raised. Raise it again for the task as it is.`,
  );
});
