/**
 * On a phone (390 × 844): no signed-in page scrolls sideways, as a whole or inside a box; tables
 * are stacked rows whose every cell is on screen; task names wrap between words; the operating
 * map's text keeps a readable size; a long decision keeps its ruling on screen; and a newcomer
 * signs in, reads the inbox, opens a decision and rules on it. With two workspaces, the switcher with
 * its pending counts, the inbox of all workspaces and the page that asks before switching fit too.
 */
import { randomUUID } from 'node:crypto';
import { expect, test, type Page } from '@playwright/test';
import { agent, fixture, raiseAndAsk, raiseBlocking } from './support';

test.use({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });

/** A webhook endpoint a test made, deleted after it so that nothing keeps retrying it. */
let endpoint: string | null = null;
test.afterEach(async ({ request }) => {
  if (!endpoint) return;
  const deleted = await request.delete(`/api/v1/webhooks/${endpoint}`, {
    headers: { Authorization: `Bearer ${fixture().apiKey}`, 'Content-Type': 'application/json' },
    data: '{}',
  });
  expect(deleted.status()).toBe(200);
  endpoint = null;
});

/** What scrolls sideways: the page, or any box on it (a code block's own scrolling aside). */
function sideways(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) found.push(`the page is ${root.scrollWidth} px wide in ${root.clientWidth}`);
    for (const el of document.body.querySelectorAll<HTMLElement>('*')) {
      if (el.closest('pre') || !['auto', 'scroll'].includes(getComputedStyle(el).overflowX)) continue;
      if (el.scrollWidth > el.clientWidth + 1)
        found.push(`<${el.localName} class="${el.className}"> is ${el.scrollWidth} px wide in ${el.clientWidth}`);
    }
    return found;
  });
}

async function signInOnPhone(page: Page, email: string) {
  await page.goto('/signin');
  expect(await sideways(page)).toEqual([]);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(fixture().password);
  await page.getByRole('button', { name: 'Sign in' }).tap();
  await expect(page).toHaveURL(/\/decisions$/);
}

/** The longest title a decision takes, in words a phone wraps. */
const LONG_TITLE = 'Approve moving every regional onboarding team onto the shared customer platform before the quarter closes '
  .repeat(5)
  .slice(0, 500);

async function raiseLong(request: Parameters<typeof raiseAndAsk>[0], title = LONG_TITLE) {
  return raiseAndAsk(
    request,
    { title, description: 'What moves, who is affected and what it costs. '.repeat(60) },
    {
      recommendation_note: 'The shared platform is ready. '.repeat(10),
      impact_if_delayed: 'Every region keeps its own tools. '.repeat(10),
    },
  );
}

test('no signed-in page scrolls sideways at 390 px; tables are stacked rows; task names and the map stay readable', async ({
  page,
  request,
}) => {
  const { decision } = await raiseLong(request);
  const created = await agent(request, 'POST', '/initiatives', {
    title: 'Internationalisation of the onboarding programme',
    workstreams: [
      {
        ref: 'docs',
        name: 'Documentation',
        milestones: [
          {
            title: 'Assessed',
            tasks: [
              { title: 'Internationalisation readiness of the documentation', estimate_hours: 6, agent_id: 'documentation-assessor' },
            ],
          },
        ],
      },
      {
        ref: 'hire',
        name: 'Hiring',
        depends_on: ['docs'],
        milestones: [{ title: 'First five', tasks: [{ title: 'Post roles', estimate_hours: 2 }] }],
      },
      { ref: 'launch', name: 'Launch', depends_on: ['hire'], milestones: [] },
    ],
  });
  expect(created.status).toBe(201);
  const initiative = created.body.data.initiative as { id: string };
  const taskId = created.body.data.tree.workstreams[0].milestones[0].tasks[0].id as string;
  // A chat-style URL, long and unbroken; nothing listens there, and the endpoint goes at the end.
  const hook = await agent(request, 'POST', '/webhooks', {
    url: `http://127.0.0.1:9/services/T0000/B0000/${randomUUID()}${randomUUID()}`,
    event_types: ['decision.*'],
  });
  expect(hook.status).toBe(201);
  endpoint = hook.body.data.id;

  await signInOnPhone(page, fixture().users.owner);
  // A pending invitation, so the members page has both of its tables.
  await page.goto('/settings/members');
  await page.getByLabel('Email').fill(`a-rather-long-address-${randomUUID().slice(0, 8)}@example-company.test`);
  await page.getByRole('button', { name: 'Invite' }).tap();
  await expect(page.getByTestId('invitation-link')).toBeVisible();
  expect(await sideways(page), '/settings/members with a new invitation link').toEqual([]);

  for (const path of [
    '/decisions',
    `/decisions/${decision.id}`,
    '/initiatives',
    `/initiatives/${initiative.id}`,
    `/tasks/${taskId}`,
    '/ledger',
    '/settings/account',
    '/settings/api-keys',
    '/settings/members',
    '/settings/webhooks',
    '/workspaces/new',
  ]) {
    await page.goto(path);
    expect(await sideways(page), path).toEqual([]);
  }

  // Stacked rows: a key's state and its Revoke button are on screen, under its name, not cut off.
  await page.goto('/settings/api-keys');
  const row = page.getByRole('row', { name: /e2e agent/ });
  const revoke = row.getByRole('button', { name: 'Revoke e2e agent' });
  await revoke.scrollIntoViewIfNeeded();
  await expect(revoke).toBeInViewport({ ratio: 1 });
  const name = await row.getByRole('cell').first().boundingBox();
  await expect(row.getByRole('cell', { name: 'Active' })).toBeInViewport({ ratio: 1 });
  expect((await revoke.boundingBox())!.y).toBeGreaterThan(name!.y + name!.height);

  // Task names wrap between words, never inside one; the map is drawn at a size its text can be read.
  await page.goto(`/initiatives/${initiative.id}`);
  const task = page.getByRole('link', { name: 'Internationalisation readiness of the documentation' });
  await expect(task).toBeVisible();
  const brokenWords = await task.evaluate((link) => {
    const text = link.firstChild!;
    const broken: string[] = [];
    for (const match of (text.textContent ?? '').matchAll(/\S+/g)) {
      const range = document.createRange();
      range.setStart(text, match.index);
      range.setEnd(text, match.index + match[0].length);
      if (range.getClientRects().length > 1) broken.push(match[0]);
    }
    return broken;
  });
  expect(brokenWords).toEqual([]);
  const map = page.getByRole('img', { name: /Operating map of Internationalisation of the onboarding programme: 3 stages/ });
  await expect(map).toBeVisible();
  const smallestText = await map.evaluate((svg) => {
    const scale = svg.getBoundingClientRect().width / (svg as SVGSVGElement).viewBox.baseVal.width;
    return Math.min(...[...svg.querySelectorAll('text')].map((t) => Number(t.getAttribute('font-size')) * scale));
  });
  expect(smallestText).toBeGreaterThanOrEqual(11);
});

test('a decision with the longest title keeps its ruling buttons on the first screen', async ({ page, request }) => {
  const { decision } = await raiseLong(request);
  await signInOnPhone(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(LONG_TITLE.trim());
  const approve = page.getByRole('button', { name: 'Approve', exact: true });
  const decline = page.getByRole('button', { name: 'Decline', exact: true });
  expect(await page.evaluate(() => window.scrollY)).toBe(0);
  await expect(approve).toBeInViewport({ ratio: 1 });
  await expect(decline).toBeInViewport({ ratio: 1 });

  // Still there when reading the end of the page, and nothing of the page is hidden under them.
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  await expect(approve).toBeInViewport({ ratio: 1 });
  const lastEntry = page.getByRole('region', { name: 'History' }).getByRole('listitem').last();
  expect((await lastEntry.boundingBox())!.y + (await lastEntry.boundingBox())!.height).toBeLessThanOrEqual(
    (await approve.boundingBox())!.y,
  );

  // The confirmation comes up where the buttons were, on screen.
  await page.evaluate(() => window.scrollTo(0, 0));
  await decline.tap();
  const confirm = page.getByRole('group', { name: 'Confirm ruling' });
  await expect(confirm.getByRole('button', { name: 'Confirm decline' })).toBeInViewport({ ratio: 1 });
  await confirm.getByRole('button', { name: 'Go back' }).tap();
  await expect(decline).toBeFocused();
});

test('a newcomer on a phone signs in, reads the inbox, opens a decision and rules on it, never scrolling sideways', async ({
  page,
  request,
}) => {
  const title = `Ship the phone release ${randomUUID().slice(0, 6)} to every onboarding region this week`;
  const { decision } = await raiseLong(request, title);
  await signInOnPhone(page, fixture().users.approver);
  expect(await sideways(page), 'the inbox').toEqual([]);

  const item = page.getByRole('link', { name: new RegExp(title) });
  await item.scrollIntoViewIfNeeded();
  await item.tap();
  await expect(page).toHaveURL(new RegExp(`/decisions/${decision.id}$`));
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(title);
  expect(await sideways(page), 'the decision').toEqual([]);
  // The ruling is in reach from the first screen, before a word of the long context is scrolled.
  const approve = page.getByRole('button', { name: 'Approve', exact: true });
  await expect(approve).toBeInViewport({ ratio: 1 });

  await page.getByLabel('Note (optional)').fill('Go ahead, from my phone.');
  await approve.tap();
  expect(await sideways(page), 'the confirmation').toEqual([]);
  await page.getByRole('button', { name: 'Confirm approve' }).tap();
  await expect(page.getByRole('status').filter({ hasText: 'Approved' })).toBeInViewport();
  expect(await sideways(page), 'the ruled decision').toEqual([]);
  const ruled = (await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision;
  expect(ruled).toMatchObject({ status: 'approved', resolution: { resolved_by_name: 'Avery Approver', note: 'Go ahead, from my phone.' } });
});

test('with two workspaces, the switcher with its pending counts, the inbox of all workspaces and the switch confirmation fit a phone', async ({
  page,
  request,
}) => {
  // A blocking decision waiting in e2e, with a title as long as a phone meets.
  const title = `Approve the regional onboarding budget ${randomUUID().slice(0, 6)} before the quarter closes`;
  const decisionId = await raiseBlocking(request, `Blocked on a phone ${randomUUID().slice(0, 6)}`, title);

  // A second workspace with a long name, which becomes current.
  const name = `Regional onboarding programme for the Lisbon office ${randomUUID().slice(0, 6)}`;
  await signInOnPhone(page, fixture().users.owner);
  await page.goto('/workspaces/new');
  await page.getByLabel('Name').fill(name);
  await page.getByRole('button', { name: 'Create workspace' }).tap();
  await expect(page).toHaveURL(/\/decisions$/);
  const switcher = page.getByLabel('Current workspace');
  await expect(switcher.locator('option:checked')).toHaveText(`${name} (owner)`);
  await expect(switcher.locator(`option[value="${fixture().workspaceId}"]`)).toHaveText(/^e2e \(owner\) · \d+ pending, \d+ blocking$/);

  // This workspace's inbox, saying what waits elsewhere; the header's switcher stays on screen.
  await expect(page.getByRole('note')).toContainText('Also waiting in your other workspaces');
  expect(await sideways(page), '/decisions with a note of the other workspaces').toEqual([]);
  expect((await switcher.boundingBox())!.x + (await switcher.boundingBox())!.width).toBeLessThanOrEqual(390);

  // All workspaces: each entry on screen, its workspace named.
  await page.getByRole('link', { name: /^All workspaces/ }).tap();
  await expect(page).toHaveURL(/\/decisions\?view=all$/);
  expect(await sideways(page), '/decisions?view=all').toEqual([]);
  const entry = page.getByRole('list', { name: 'Decisions in all workspaces' }).getByRole('listitem').filter({ hasText: title });
  const button = entry.getByRole('button');
  await button.scrollIntoViewIfNeeded();
  const box = (await button.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(390);

  // A deep link into e2e asks first (a POST), and the page that asks fits too.
  await page.goto(`/decisions/${decisionId}`);
  await expect(page).toHaveURL(/\/workspaces\/switch\/confirm\?/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Switch to e2e?');
  expect(await sideways(page), '/workspaces/switch/confirm (to e2e)').toEqual([]);
  await page.getByRole('button', { name: 'Switch to e2e to see this' }).tap();
  await expect(page).toHaveURL(new RegExp(`/decisions/${decisionId}$`));
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(title);
  expect(await sideways(page), 'the decision, after switching').toEqual([]);

  // Back the other way: the long name in the question and on its button.
  const secondId = await switcher.locator('option').filter({ hasText: name }).getAttribute('value');
  await page.goto(`/workspaces/switch/confirm?${new URLSearchParams({ to: secondId!, return: '/decisions' })}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Switch to ${name}?`);
  expect(await sideways(page), '/workspaces/switch/confirm (to the long name)').toEqual([]);
  const confirm = page.getByRole('button', { name: `Switch to ${name} to see this` });
  const confirmBox = (await confirm.boundingBox())!;
  expect(confirmBox.x + confirmBox.width).toBeLessThanOrEqual(390);
});

test('the API reference fits a phone: the page never scrolls sideways, an operation opened included', async ({ page }) => {
  await page.goto('/docs/api');
  await expect(page.locator('.swagger-ui .info .title')).toContainText('Accountable Work Service API');
  const width = () => page.evaluate(() => document.documentElement.scrollWidth);
  await expect(page.locator('.opblock-summary').first()).toBeVisible();
  expect(await width()).toBeLessThanOrEqual(390);
  // An operation opened shows its parameters, its responses and their schemas: wide tables and code.
  await page.locator('.opblock-summary').first().click();
  await expect(page.locator('.opblock-body .responses-table').first()).toBeVisible();
  expect(await width()).toBeLessThanOrEqual(390);
});
