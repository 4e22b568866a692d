/**
 * Artifacts where the approver meets them: an agent registers a Markdown report (with
 * markup that must not run), a 5 MiB dataset by URI, an image and an HTML page, and raises a
 * decision about publishing them with an action. The decision page shows the report as text, the
 * image inline, the page as a download and the dataset's address as text, each with its digest;
 * approving in Chromium approves those exact bytes: the grant's digest covers the artifacts' digests.
 * Through the real server in Chromium.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { expect, test } from '@playwright/test';
import { agent, fixture, raiseAndAsk, signIn } from './support';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const digest = (value: unknown) => `sha256:${sha256(canonicalize(value)!)}`;

// A 1×1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

test('the decision page shows what is being approved, safely, and the approval covers those exact bytes', async ({ page, request }) => {
  const hostile = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>';
  const report = `# Pricing page\n\nNew prices for the launch.\n\n${hostile}\n`;
  const register = async (body: Record<string, unknown>) => {
    const res = await agent(request, 'POST', '/artifacts', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data as { id: string; digest: string; content_url: string | null };
  };
  const work = await agent(request, 'POST', '/work', { title: 'Write the new pricing page' });
  expect(work.status).toBe(201);
  const taskId: string = work.body.data.taskId;
  const md = await register({
    task_id: taskId,
    artifact_type: 'blog_post',
    title: 'Pricing page copy',
    media_type: 'text/markdown',
    content: Buffer.from(report).toString('base64'),
  });
  const datasetDigest = sha256('the dataset behind the prices');
  const dataset = await register({
    task_id: taskId,
    artifact_type: 'market_research_brief',
    title: 'Price survey data',
    media_type: 'text/csv',
    uri: 'https://data.example.com/surveys/prices.csv',
    sha256: datasetDigest,
    size_bytes: 5 * 1024 * 1024,
  });
  const image = await register({
    artifact_type: 'blog_post',
    title: 'Hero image',
    media_type: 'image/png',
    content: PNG.toString('base64'),
  });
  const html = await register({
    artifact_type: 'blog_post',
    title: 'Rendered page',
    media_type: 'text/html',
    content: Buffer.from(`<html><body>${hostile}</body></html>`).toString('base64'),
  });

  const action = { tool: 'publish_page', arguments: { path: '/pricing' } };
  const { decision } = await raiseAndAsk(request, {
    title: 'Publish the new pricing page?',
    action,
    artifact_ids: [md.id, dataset.id, image.id, html.id],
  });
  const bound = { ...action, artifacts: [md, dataset, image, html].map((a) => ({ id: a.id, sha256: a.digest })) };
  expect(decision.action).toEqual(bound);
  expect(decision.action_digest).toBe(digest(bound));

  await signIn(page, fixture().users.approver);
  await page.goto(`/decisions/${decision.id}`);
  const panel = page.getByRole('region', { name: 'What is being approved' });
  const items = panel.getByTestId('artifact');
  await expect(items).toHaveCount(4);
  // The report, as text: the markup is characters on the page, and nothing of it ran.
  await expect(items.nth(0).getByTestId('artifact-text')).toHaveText(report);
  await expect(page.locator('img[src="x"]')).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  await expect(items.nth(0).getByTestId('artifact-digest')).toHaveText(md.digest);
  // The dataset: its address as text, never a link; its digest.
  await expect(items.nth(1)).toContainText('https://data.example.com/surveys/prices.csv');
  await expect(items.nth(1).getByRole('link')).toHaveCount(0);
  await expect(items.nth(1).getByTestId('artifact-digest')).toHaveText(`sha256:${datasetDigest}`);
  // The image, loaded from the content route with the approver's session.
  const img = items.nth(2).getByRole('img', { name: 'Hero image' });
  await expect(img).toHaveAttribute('src', image.content_url!);
  await expect.poll(() => img.evaluate((el) => (el as HTMLImageElement).naturalWidth)).toBe(1);
  // The HTML page: a download, never rendered here.
  await expect(items.nth(3).getByRole('link', { name: 'Download' })).toHaveAttribute('href', html.content_url!);
  await expect(page.locator('iframe')).toHaveCount(0);

  await page.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.getByRole('button', { name: 'Confirm approve' }).click();
  await expect(page.getByRole('status')).toContainText('Approved');

  // The grant names the digest of the action with the artifacts' digests: those bytes, no others.
  const polled = (await agent(request, 'GET', `/decisions/${decision.id}`)).body.decision;
  expect(polled.approved_action).toEqual(bound);
  const jwks = await request.get(`/api/v1/workspaces/${fixture().workspaceId}/jwks.json`);
  const { payload } = await jwtVerify(polled.grant.token, createLocalJWKSet(await jwks.json()), { algorithms: ['EdDSA'] });
  expect(payload.act).toBe(digest(bound));
  // The task's receipt lists both digests, the report's and the dataset's (registered by URI).
  const receipt = (await agent(request, 'GET', `/receipts/${work.body.data.receiptId}`)).body;
  expect(receipt.artifacts.map((a: { digest: string }) => a.digest)).toEqual([md.digest, `sha256:${datasetDigest}`]);
  // Anyone holding the report checks it against that digest.
  const downloaded = await request.get(`/api/v1/artifacts/${md.id}/content`, { headers: { Authorization: `Bearer ${fixture().apiKey}` } });
  expect(`sha256:${sha256(await downloaded.body())}`).toBe(md.digest);
  // The page itself, opened directly, is an attachment in a sandbox: never a page of this origin.
  const opened = await request.get(html.content_url!, { headers: { Authorization: `Bearer ${fixture().apiKey}` } });
  expect(opened.headers()['content-disposition']).toMatch(/^attachment;/);
  expect(opened.headers()['content-security-policy']).toContain('sandbox');
});
