import { expect, test } from '@playwright/test';
import { APP_ORIGIN, agent, fixture, raiseAndAsk, signIn } from './support';

test('approve: an agent asks over REST, a human approves in the browser, the agent’s poll sees it', async ({ page, request }) => {
  const { decision, attention } = await raiseAndAsk(
    request,
    { title: 'Publish the pricing page?', description: 'Copy and prices were reviewed by finance.', urgency: 'critical' },
    { recommended_option_id: 'approve', recommendation_note: 'All checks passed.', impact_if_delayed: 'Launch slips a day.' },
  );
  expect(attention.resolve_url).toBe(`${APP_ORIGIN}/decisions/${decision.id}`);
  expect(attention.poll_after_ms).toBe(5000);

  await signIn(page, fixture().users.approver);
  const item = page.getByRole('link', { name: /Publish the pricing page\?/ });
  await expect(item).toBeVisible();
  await expect(item).toContainText('critical');

  await page.goto(attention.resolve_url);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Publish the pricing page?');
  await expect(page.getByText('All checks passed.')).toBeVisible();
  await expect(page.getByText('Launch slips a day.')).toBeVisible();
  await page.getByLabel('Note (optional)').fill('Ship it.');
  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');
  await expect(page.getByTestId('resolution')).toContainText('Ship it.');

  const polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision.status).toBe('approved');
  expect(polled.body.decision.resolution).toMatchObject({
    outcome: 'approved',
    note: 'Ship it.',
    resolved_by_type: 'human',
    resolved_by_name: 'Avery Approver',
  });
  const events = await agent(request, 'GET', '/events/stream?type=decision.approved&limit=100');
  const event = events.body.data.find((e: { aggregateId: string }) => e.aggregateId === decision.id);
  expect(event).toMatchObject({ actorType: 'human', eventType: 'decision.approved' });
  const verified = await agent(request, 'GET', '/ledger/verify');
  expect(verified.body.data.verified).toBe(true);
});

test('decline: an owner declines with a note', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: 'Email all customers tonight?', shape: 'generic', urgency: 'standard' });
  await signIn(page, fixture().users.owner);
  await page.goto(`/decisions/${decision.id}`);
  await page.getByLabel('Note (optional)').fill('Wait for Monday.');
  await page.getByRole('button', { name: 'Decline' }).click();
  await page.getByRole('button', { name: 'Confirm decline' }).click();
  await expect(page.getByRole('status')).toContainText('Declined');
  const polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision).toMatchObject({ status: 'declined', resolution: { note: 'Wait for Monday.' } });
});

test('options: a human chooses one option of an option_select decision', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(
    request,
    {
      title: 'Which region first?',
      shape_context: {
        options: [
          { id: 'eu', label: 'Europe', description: 'GDPR review done' },
          { id: 'us', label: 'United States' },
          { id: 'apac', label: 'Asia-Pacific' },
        ],
      },
    },
    { recommended_option_id: 'eu' },
  );
  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  await expect(page.getByRole('radio', { name: /Europe \(recommended\)/ })).toBeChecked();
  await expect(page.getByTitle('shape: option_select')).toHaveText('Pick one option');
  await page.getByRole('radio', { name: 'United States' }).check();
  await page.getByRole('button', { name: 'Approve selection' }).click();
  await expect(page.getByText('with United States')).toBeVisible();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');
  const polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision.resolution.option_ids).toEqual(['us']);
});

test('a viewer reads but cannot rule, in the page or through the API', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: 'Viewer check' });
  await signIn(page, fixture().users.viewer);
  await page.goto(`/decisions/${decision.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Viewer check');
  await expect(page.getByRole('button', { name: 'Approve' })).toHaveCount(0);
  await expect(page.getByText('Your role can read it only')).toBeVisible();
  const attempt = await page.request.post(`/api/v1/decisions/${decision.id}/approve`, {
    headers: { 'Content-Type': 'application/json', Origin: APP_ORIGIN },
    data: '{}',
  });
  expect(attempt.status()).toBe(403);
  expect((await attempt.json()).error.code).toBe('forbidden');
  const polled = await agent(request, 'GET', `/decisions/${decision.id}`);
  expect(polled.body.decision.status).toBe('pending');
});

test('a member of another workspace gets 404, and an API key cannot rule', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: 'Not theirs' });
  const byKey = await agent(request, 'POST', `/decisions/${decision.id}/approve`, {});
  expect(byKey.status).toBe(403);
  expect(byKey.body.error.code).toBe('human_session_required');
  await signIn(page, fixture().users.stranger);
  const res = await page.goto(`/decisions/${decision.id}`);
  expect(res?.status()).toBe(404);
});

test('agent-written text is shown as text and never runs', async ({ page, request }) => {
  const hostile = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>';
  const { decision } = await raiseAndAsk(
    request,
    { title: `Title ${hostile}`, description: `Context ${hostile}` },
    { recommendation_note: `Note ${hostile}` },
  );
  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  await expect(page.getByTestId('description')).toHaveText(`Context ${hostile}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Title ${hostile}`);
  await expect(page.locator('img[src="x"]')).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
});

test('OWASP API10: every page sends a nonce Content-Security-Policy, so markup that reached a page still could not run', async ({
  page,
  request,
}) => {
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  const { decision } = await raiseAndAsk(request, { title: 'Policy check' });
  await signIn(page, fixture().users.approver);
  const res = await page.goto(`/decisions/${decision.id}`);
  const policy = res?.headers()['content-security-policy'] ?? '';
  expect(policy).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{24}' 'strict-dynamic'(;|$)/);
  expect(policy).toContain("frame-ancestors 'none'");
  expect(policy).toContain("object-src 'none'");
  // The page works under it (its own scripts carry the nonce): the ruling form is interactive.
  await expect(page.getByRole('button', { name: 'Approve', exact: true })).toBeEnabled();
  expect(violations).toEqual([]);
  // Markup injected past React (as a rendering bug would let through) is refused by the browser.
  await page.evaluate(() => {
    const div = document.createElement('div');
    div.innerHTML = '<img src="data:," onerror="window.__pwned = 1">';
    document.body.append(div);
  });
  await expect.poll(() => violations.length).toBeGreaterThan(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  // A second view gets a new nonce.
  const again = await page.goto(`/decisions/${decision.id}`);
  expect(again?.headers()['content-security-policy']).not.toBe(policy);
});

test('the decisions list shows a new decision without a reload, pending first by urgency', async ({ page, request }) => {
  await signIn(page, fixture().users.owner);
  await raiseAndAsk(request, { title: 'Deferred one', urgency: 'deferred' });
  const title = `Fresh critical ${Date.now()}`;
  await raiseAndAsk(request, { title, urgency: 'critical' });
  await expect(page.getByRole('link', { name: new RegExp(title) })).toBeVisible({ timeout: 15_000 });
  const titles = await page.locator('.decision-list .title').allTextContents();
  expect(titles.indexOf(title)).toBeLessThan(titles.indexOf('Deferred one'));
});

test('an owner creates an API key (shown once), which works until revoked; then signs out', async ({ page, request }) => {
  await signIn(page, fixture().users.owner);
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByLabel('New key name').fill('browser-made');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = (await page.getByTestId('new-key').textContent())!.trim();
  expect(secret).toMatch(/^awk_/);
  const ok = await request.get('/api/v1/events/stream', { headers: { Authorization: `Bearer ${secret}` } });
  expect(ok.status()).toBe(200);

  await page.getByRole('button', { name: 'Revoke browser-made' }).click();
  await page.getByRole('group', { name: 'Confirm: Revoke browser-made' }).getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByRole('row', { name: /browser-made/ })).toContainText('Revoked');
  // The revealed key goes with it: a revoked key is no use to anyone.
  await expect(page.getByTestId('new-key')).toHaveCount(0);
  const refused = await request.get('/api/v1/events/stream', { headers: { Authorization: `Bearer ${secret}` } });
  expect(refused.status()).toBe(401);

  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'next-auth.session-token');
  expect(session).toBeDefined();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/signin/);
  // The cookie copied before signing out no longer works.
  const replayed = await request.get('/api/v1/decisions', { headers: { Cookie: `next-auth.session-token=${session!.value}` } });
  expect(replayed.status()).toBe(401);
  await page.goto('/decisions');
  await expect(page).toHaveURL(/\/signin\?callbackUrl=%2Fdecisions/);
});

test('an owner cancels a pending decision', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: 'Withdraw this' });
  await signIn(page, fixture().users.owner);
  await page.goto(`/decisions/${decision.id}`);
  await page.getByRole('button', { name: 'Cancel this decision' }).click();
  await page.getByRole('button', { name: 'Confirm cancel' }).click();
  await expect(page.getByRole('status')).toContainText('Cancelled');
  expect((await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision.status).toBe('cancelled');
});

test('a wrong password is refused with a message', async ({ page }) => {
  await page.goto('/signin');
  await page.getByLabel('Email').fill(fixture().users.owner);
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'do not match' })).toBeVisible();
});
