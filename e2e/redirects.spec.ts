/**
 * No redirect of the real built server leaves the app's origin, and only APP_URL names that origin.
 *
 * Signed in, a `callbackUrl` or `return` that normalises to `//evil.com` (`/.//evil.com`,
 * `/a/..//evil.com/x`, encoded `%2F%2F`, `/%5Cevil.com`, a tab) lands on /decisions; a request
 * path that normalises to `//host` gets, from Next.js itself, a path on this origin; the
 * workspace switch answers with a relative Location, so `Host: evil.example` cannot steer it, and
 * a page whose Origin only the Host vouches for cannot switch. With an https APP_URL every answer
 * carries HSTS; with http none does.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { freePort } from './npm-start';
import { APP_ORIGIN, fixture, signIn } from './support';

/** Every value a return path was seen or could be crafted to take that ends at another host. */
const HOSTILE_RETURNS = [
  '/.//evil.com',
  '/a/..//evil.com/x',
  '//evil.com',
  '/%2F%2Fevil.com',
  '/%5Cevil.com',
  '/\\evil.com',
  '/\t/evil.com',
  'https://evil.com',
];

/** The origin a browser goes to when it follows `location` from a page of the app. */
const followedOrigin = (location: string | undefined) => new URL(location ?? '', `${APP_ORIGIN}/somewhere/deep`).origin;

/** The page's session cookie, for requests sent by hand (a Host header Playwright's request would not send). */
async function cookieHeader(page: Page): Promise<string> {
  return (await page.context().cookies(APP_ORIGIN)).map((c) => `${c.name}=${c.value}`).join('; ');
}

/**
 * One request, its path sent exactly as given (no client normalising its dot segments or
 * backslashes first), no redirect followed.
 */
function rawTo(
  origin: string,
  pathAsSent: string,
  opts: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; location: string | undefined; hsts: string | undefined }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostname, port, path: pathAsSent, method: opts.method ?? 'GET', headers: opts.headers, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => {
          const hsts = res.headers['strict-transport-security'];
          resolve({ status: res.statusCode!, location: res.headers.location, hsts: Array.isArray(hsts) ? hsts[0] : hsts });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

const raw = (pathAsSent: string, opts: Parameters<typeof rawTo>[2] = {}) => rawTo(APP_ORIGIN, pathAsSent, opts);

test('signed in, a sign-in link with a return path that normalises to another host lands on /decisions', async ({ page }) => {
  await signIn(page, fixture().users.owner);
  const cookie = await cookieHeader(page);
  for (const hostile of HOSTILE_RETURNS) {
    const res = await raw(`/signin?callbackUrl=${encodeURIComponent(hostile)}`, { headers: { cookie } });
    expect(res.status, hostile).toBe(307);
    expect(res.location, hostile).toBe('/decisions');
  }
  // In Chromium, the probe's own link: the browser stays on the app.
  await page.goto('/signin?callbackUrl=%2F.%2F%2Fevil.com');
  await expect(page).toHaveURL(`${APP_ORIGIN}/decisions`);
  // A path of the app, dot segments and all, is still where it goes.
  await page.goto(`/signin?callbackUrl=${encodeURIComponent('/a/../settings/account')}`);
  await expect(page).toHaveURL(`${APP_ORIGIN}/settings/account`);
});

test('the workspace switch goes back only to a path of the app, by a relative Location that Host cannot steer', async ({ page }) => {
  await signIn(page, fixture().users.owner);
  const cookie = await cookieHeader(page);
  const form = (returnTo: string) => new URLSearchParams({ workspace: fixture().workspaceId, return: returnTo }).toString();
  for (const hostile of HOSTILE_RETURNS) {
    // Confirming: the target is the current workspace already, so the page goes straight back.
    const confirm = await raw(`/workspaces/switch/confirm?to=${fixture().workspaceId}&return=${encodeURIComponent(hostile)}`, {
      headers: { cookie },
    });
    expect([confirm.status, confirm.location], hostile).toEqual([307, '/decisions']);
    // A link's GET goes to the confirmation, with the return path already made safe.
    const get = await raw(`/workspaces/switch?to=${fixture().workspaceId}&return=${encodeURIComponent(hostile)}`, { headers: { cookie } });
    expect(get.status, hostile).toBe(303);
    expect(followedOrigin(get.location), hostile).toBe(APP_ORIGIN);
    expect(new URL(get.location!, APP_ORIGIN).searchParams.get('return'), hostile).toBe('/decisions');
    // The switch itself, from the app's page, even with a Host of another site.
    for (const host of [new URL(APP_ORIGIN).host, 'evil.example']) {
      const post = await raw('/workspaces/switch', {
        method: 'POST',
        headers: { cookie, host, origin: APP_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        body: form(hostile),
      });
      expect([post.status, post.location], `${host} ${hostile}`).toEqual([303, '/decisions']);
    }
  }
  // A page of evil.example cannot switch, though its Host and Origin agree.
  const forged = await raw('/workspaces/switch', {
    method: 'POST',
    headers: { cookie, host: 'evil.example', origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    body: form('/decisions'),
  });
  expect(forged.status).toBe(403);
  // In Chromium: the confirmation page's button, given the probe's return path, stays on the app.
  await page.goto(`/workspaces/switch?to=${fixture().workspaceId}&return=${encodeURIComponent('/.//evil.com')}`);
  await expect(page).toHaveURL(`${APP_ORIGIN}/decisions`);
});

test('a request path that normalises to //host is redirected by Next.js to a path of this origin', async ({ page }) => {
  await signIn(page, fixture().users.owner);
  const cookie = await cookieHeader(page);
  for (const sent of ['/a/..//evil.com/x', '//evil.com/x', '//evil.com', '/.//evil.com', '/\\evil.com', '/\\/evil.com/', '///evil.com/']) {
    for (const headers of [{}, { cookie }] as Record<string, string>[]) {
      const res = await raw(sent, { headers });
      if (res.location !== undefined) expect(followedOrigin(res.location), sent).toBe(APP_ORIGIN);
      expect(res.status, sent).toBeLessThan(500);
    }
  }
  // In Chromium, which resolves the dot segments itself and sends //evil.com/x: still this origin.
  await page.goto('/a/..//evil.com/x');
  expect(new URL(page.url()).origin).toBe(APP_ORIGIN);
});

test('HSTS: never on http; with an https APP_URL, on every answer (pages, auth, tRPC, assets, API, MCP)', async () => {
  // The e2e server's APP_URL is http.
  for (const p of ['/signin', '/api/v1/health']) expect((await raw(p)).hsts, p).toBeUndefined();

  // The real server with an https APP_URL (TLS terminated in front of it, as in production).
  test.setTimeout(120_000);
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aws-hsts-'));
  const server = spawn(process.execPath, [path.join(import.meta.dirname, '..', 'scripts', 'serve.mjs')], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      PGLITE_DATA_DIR: path.join(dataDir, 'pglite'),
      APP_URL: `https://work.example.test`,
      LOG_LEVEL: 'warn',
      SEED_DEMO: 'false',
    },
    stdio: 'ignore',
  });
  try {
    const origin = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const up = await fetch(`${origin}/api/v1/health`).catch(() => null);
      if (up?.ok) break;
      if (Date.now() > deadline || server.exitCode !== null) throw new Error('the https-APP_URL server did not come up');
      await new Promise((r) => setTimeout(r, 250));
    }
    const answers: [string, 'GET' | 'POST', string?][] = [
      ['/signin', 'GET'],
      ['/decisions', 'GET'],
      ['/no-such-page', 'GET'],
      ['//evil.com/x', 'GET'],
      ['/favicon.ico', 'GET'],
      ['/api/auth/session', 'GET'],
      ['/api/trpc/account.setupLink?input=%7B%7D', 'GET'],
      ['/api/v1/health', 'GET'],
      ['/api/v1/decisions', 'GET'],
      ['/mcp', 'POST', '{}'],
    ];
    for (const [p, method, body] of answers) {
      const res = await rawTo(origin, p, { method, body, headers: body ? { 'content-type': 'application/json' } : {} });
      expect(res.hsts, `${method} ${p} (${res.status})`).toBe('max-age=31536000; includeSubDomains');
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
});
