/** The ledger in the browser: browsed newest first, verified with progress, downloaded as a bundle anyone can check. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { agent, fixture, raiseAndAsk, signIn } from './support';

const root = path.join(import.meta.dirname, '..');

test('/ledger shows events newest first, verifies the chain, and its bundle passes ledger:verify --bundle', async ({ page, request }) => {
  await raiseAndAsk(request, { title: `Ledger page ${Date.now()}` });
  await signIn(page, fixture().users.viewer);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Ledger' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Ledger');

  const sequences = await page.locator('table.ledger tbody tr td:first-child').allTextContents();
  expect(sequences.length).toBeGreaterThan(3);
  const numbers = sequences.map(Number);
  expect(numbers).toEqual([...numbers].sort((a, b) => b - a));
  const head = (await agent(request, 'GET', '/ledger/verify')).body.data.head.sequence as number;
  expect(numbers[0]).toBe(head);
  // What happened and who did it, in words (the type a click away to filter by).
  const newest = page.locator(`#event-${head}`);
  await expect(newest.locator('td').nth(1)).toHaveText('Decision brought to a human’s attentiondecision.attention_requested');
  await expect(newest.locator('td').nth(3)).toHaveText('an agent (key “e2e agent”)');

  await page.getByRole('button', { name: 'Verify the chain' }).click();
  await expect(page.getByRole('status')).toContainText(`The chain verifies: all ${head} events are intact`);
  await expect(page.getByRole('progressbar', { name: 'Events verified' })).toHaveAttribute('value', String(head));

  const downloading = page.waitForEvent('download');
  await page.getByRole('link', { name: 'Download a bundle' }).click();
  const download = await downloading;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aws-bundle-'));
  try {
    const file = path.join(dir, download.suggestedFilename());
    await download.saveAs(file);
    const bundle = JSON.parse(readFileSync(file, 'utf8'));
    expect(bundle).toMatchObject({ format: 'aws-ledger-bundle/1', workspaceId: fixture().workspaceId, head: { sequence: head } });
    expect(bundle.events).toHaveLength(head);
    // With the signed checkpoint of its head, checked against the key the API lists (pinned).
    const [key] = (await agent(request, 'GET', '/ledger/keys')).body.data as { vkey: string }[];
    expect(bundle.checkpoint).toMatchObject({ vkeys: [key!.vkey], subtrees: [] });
    // Checked offline, by the command line tool, as a process.
    const verified = spawnSync(process.execPath, ['scripts/tool.mjs', 'ledger-verify', '--bundle', file, '--vkey', key!.vkey], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, LOG_LEVEL: 'silent' },
    });
    expect(verified.status, verified.stderr + verified.stdout).toBe(0);
    expect(verified.stdout).toMatch(
      new RegExp(`^OK: ${head} events verified, head ${head} \\S+, matching the checkpoint signed at tree size ${head} by key `, 'm'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('filters by event type and aggregate, and a decision’s history links each entry to its event', async ({ page, request }) => {
  const { decision } = await raiseAndAsk(request, { title: `History links ${Date.now()}` });
  await signIn(page, fixture().users.approver);
  await page.goto('/ledger');
  await page.getByLabel('Aggregate id').fill(decision.id);
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(new RegExp(`aggregate=${decision.id}`));
  const types = await page.locator('table.ledger tbody tr td:nth-child(2) code').allTextContents();
  expect(types).toEqual(['decision.attention_requested', 'decision.created']);
  await page.getByLabel('Event type').fill('decision.created');
  await page.getByLabel('Aggregate id').fill('');
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(/type=decision\.created&aggregate=$/);
  const onlyCreated = await page.locator('table.ledger tbody tr td:nth-child(2) code').allTextContents();
  expect(new Set(onlyCreated)).toEqual(new Set(['decision.created']));

  await page.goto(`/decisions/${decision.id}`);
  const history = page.getByRole('region', { name: 'History' }).or(page.locator('section[aria-labelledby="history-h"]'));
  await history.getByText('Ledger record').first().click();
  await history
    .getByRole('link', { name: /in this workspace’s ledger/ })
    .first()
    .click();
  await expect(page).toHaveURL(/\/ledger\?at=\d+#event-\d+$/);
  const sequence = /at=(\d+)/.exec(page.url())![1];
  const row = page.locator(`#event-${sequence}`);
  await expect(row).toHaveClass(/highlight/);
  await expect(row).toContainText('decision.created');
  // And the event links back to what it recorded.
  await row.getByRole('link', { name: /^decision / }).click();
  await expect(page).toHaveURL(new RegExp(`/decisions/${decision.id}$`));
});

test('the verification’s steps answer 400, not 500, to progress the browser made up', async ({ page }) => {
  await signIn(page, fixture().users.viewer);
  const step = (signed: { treeSize: number; rootHash: string; tree: string[] }) =>
    page.request.get(
      `/api/trpc/ledger.verifyStep?input=${encodeURIComponent(
        JSON.stringify({
          workspace_id: fixture().workspaceId,
          progress: {
            position: { sequence: 3, hash: `sha256:${'0'.repeat(64)}` },
            checkedEvents: 3,
            head: { sequence: 3, hash: `sha256:${'0'.repeat(64)}` },
            signed,
          },
        }),
      )}`,
    );
  const madeUp = await step({ treeSize: 3, rootHash: Buffer.alloc(32, 9).toString('base64'), tree: [] });
  expect(madeUp.status()).toBe(400);
  const body = await madeUp.json();
  expect(body.error.data.appCode).toBe('validation_failed');
  expect(body.error.message).toMatch(/not on record\. Start the verification again/);
});
