import { expect, test } from '@playwright/test';

test('the home page says what the service is and links to the API reference', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { level: 1, name: 'Accountable Work Service' })).toBeVisible();
  await page.getByRole('link', { name: 'API reference' }).first().click();
  await expect(page).toHaveURL(/\/docs\/api$/);
});

test('the API reference renders the live OpenAPI document, under a policy that runs only its own scripts', async ({ page }) => {
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  const res = await page.goto('/docs/api');
  const policy = res?.headers()['content-security-policy'] ?? '';
  expect(policy).toMatch(/script-src 'self'(;|$)/);
  expect(policy).toContain("frame-ancestors 'none'");
  await expect(page.getByText('Accountable Work Service API', { exact: false }).first()).toBeVisible();
  // Swagger UI draws one block per operation, read from /api/v1/openapi.json.
  const createWork = page.locator('.opblock-post').filter({ hasText: '/work' }).first();
  await expect(createWork).toBeVisible();
  await createWork.locator('.opblock-summary').click();
  await expect(page.getByText('Idempotent replay', { exact: false }).first()).toBeVisible();
  expect(violations).toEqual([]);
});
