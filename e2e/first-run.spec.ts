/**
 * The first run without the demo, and sign-in that resists guessing, each on a service of its own
 * started as an operator starts it (npm start):
 *
 * - SEED_DEMO=false on an empty database prints a one-time setup link; it creates the first owner
 *   and workspace, works once, and /setup without it is a 404.
 * - Two instances on one PostgreSQL database: ten wrong passwords spread over both, and the
 *   eleventh attempt, on either, is refused even with the right password (so no password was
 *   checked), saying how long to wait.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import postgres from 'postgres';
import { npmStart, stopStarted, type Started } from './npm-start';

test.describe.configure({ mode: 'serial' });
test.setTimeout(180_000);

const PASSWORD = 'first owner password 1';
const NEW_PASSWORD = 'second owner password 2';

test.describe('first run without the demo', () => {
  let dataDir: string;
  let s: Started | undefined;
  test.beforeAll(async () => {
    test.setTimeout(120_000);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'aws-first-run-'));
    s = await npmStart(path.join(dataDir, 'pglite'), undefined, { SEED_DEMO: 'false' });
  });
  test.afterAll(async () => {
    await stopStarted(s);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('npm start prints a setup link that creates the first owner once; /setup without it is 404', async ({ browser }) => {
    expect(s!.apiKey).toBe('');
    expect(s!.setupLink).toMatch(new RegExp(`^http://localhost:${s!.port}/setup\\?token=aws_setup_[A-Za-z0-9_-]{43}$`));
    const origin = `http://127.0.0.1:${s!.port}`;
    const context = await browser.newContext({ baseURL: origin });
    const page = await context.newPage();
    expect((await page.goto('/setup'))!.status()).toBe(404);
    expect((await page.goto(`/setup?token=aws_setup_${'x'.repeat(43)}`))!.status()).toBe(404);

    const link = new URL(s!.setupLink);
    await page.goto(`${link.pathname}${link.search}`);
    await page.getByLabel('Workspace name').fill('Acme');
    await page.getByLabel('Your name').fill('Ada Admin');
    await page.getByLabel('Email').fill('ada@acme.test');
    await page.getByLabel('Password (at least 12 characters)').fill(PASSWORD);
    await page.getByLabel('Password again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account and workspace' }).click();
    await expect(page).toHaveURL(`${origin}/decisions`);
    await expect(page.getByLabel('Workspace')).toHaveText('Acme');
    await expect(page.getByText('In Acme you are owner')).toBeVisible();

    const again = await browser.newContext({ baseURL: origin });
    const second = await again.newPage();
    expect((await second.goto(`${link.pathname}${link.search}`))!.status()).toBe(404);

    // The owner changes their password: this page stays signed in, the other browser is signed out.
    await second.goto('/signin');
    await second.getByLabel('Email').fill('ada@acme.test');
    await second.getByLabel('Password').fill(PASSWORD);
    await second.getByRole('button', { name: 'Sign in' }).click();
    await expect(second).toHaveURL(`${origin}/decisions`);
    await page.goto('/settings/account');
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password (at least 12 characters)').fill(NEW_PASSWORD);
    await page.getByLabel('New password again').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect(page.getByRole('status')).toHaveText('Password changed. Every other session of yours has been signed out.');
    await page.goto('/decisions');
    await expect(page.getByText('In Acme you are owner')).toBeVisible();
    await second.goto('/decisions');
    await expect(second).toHaveURL(/\/signin/);
    await again.close();
    await context.close();
  });
});

async function tryPassword(page: Page, email: string, password: string) {
  await page.goto('/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page.locator('#signin-error');
}

test.describe('sign-in limits across two instances', () => {
  // Set by e2e/global-setup.ts: the machine's server, or an embedded one started for the run.
  const admin = process.env.TEST_DATABASE_URL!;
  const name = `aws_e2e_limits_${Date.now()}`;
  let dirs: string[] = [];
  let a: Started | undefined;
  let b: Started | undefined;
  test.beforeAll(async () => {
    test.setTimeout(180_000);
    const sql = postgres(admin, { max: 1, onnotice: () => undefined });
    await sql.unsafe(`create database ${name}`);
    await sql.end();
    const url = new URL(admin);
    url.pathname = `/${name}`;
    dirs = [mkdtempSync(path.join(os.tmpdir(), 'aws-limits-a-')), mkdtempSync(path.join(os.tmpdir(), 'aws-limits-b-'))];
    // The first seeds the demo (and prints its owner); the second finds it there.
    a = await npmStart(path.join(dirs[0]!, 'pglite'), undefined, { DATABASE_URL: url.toString() });
    b = await npmStart(path.join(dirs[1]!, 'pglite'), undefined, { DATABASE_URL: url.toString() });
  });
  test.afterAll(async () => {
    await stopStarted(a);
    await stopStarted(b);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    const sql = postgres(admin, { max: 1, onnotice: () => undefined });
    await sql.unsafe(`drop database if exists ${name} with (force)`);
    await sql.end();
  });

  test('ten wrong passwords over both instances, and the eleventh attempt is refused on either, even the right one', async ({
    browser,
  }) => {
    expect(a!.owner.email).toBe('owner@demo.local');
    const pages = await Promise.all(
      [a!, b!].map(async (s) => (await browser.newContext({ baseURL: `http://127.0.0.1:${s.port}` })).newPage()),
    );
    for (let i = 0; i < 10; i++) {
      const alert = await tryPassword(pages[i % 2]!, a!.owner.email, `wrong password ${i}`);
      await expect(alert).toHaveText('That email and password do not match an account.');
    }
    for (const page of pages) {
      const alert = await tryPassword(page, a!.owner.email, a!.owner.password);
      await expect(alert).toHaveText(/^Too many sign-in attempts\. Try again in 1[45] minutes\.$/);
      await expect(page).toHaveURL(/\/signin$/);
    }
  });
});
