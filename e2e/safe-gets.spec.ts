/**
 * Nothing a GET does counts or changes anything (docs/contract.md §2.5): another site's page that makes a
 * visitor's browser load the invitation and setup links many times over (`<img src=…>`, which
 * sends cookies and comes from the visitor's address) used to spend the address's attempts with
 * links, locking the visitor out of their own invitation for 15 minutes. Through the real server
 * (scripts/serve.mjs) in Chromium.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from '@playwright/test';
import { APP_ORIGIN } from './support';

test('another site’s page loading link reads 24 times leaves the visitor’s address free to spend a link', async ({ page, request }) => {
  const reads = [
    ...Array.from(
      { length: 8 },
      (_, i) => `/api/trpc/account.invitation?input=${encodeURIComponent(JSON.stringify({ token: `awi_${'q'.repeat(42)}${i}` }))}`,
    ),
    ...Array.from(
      { length: 8 },
      (_, i) => `/api/trpc/account.setupLink?input=${encodeURIComponent(JSON.stringify({ token: `aws_setup_${'q'.repeat(42)}${i}` }))}`,
    ),
    ...Array.from({ length: 8 }, (_, i) => `/invite/awi_${'r'.repeat(42)}${i}`),
  ];
  // The other site: a page of its own origin (another port), served by a server of its own.
  const lure = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end(reads.map((path) => `<img src="${APP_ORIGIN}${path}">`).join('\n')),
  );
  await new Promise<void>((resolve) => lure.listen(0, '127.0.0.1', resolve));
  const reached = new Set<string>();
  // Each image reaches the server; the browser then withholds the answer from the other site
  // (ERR_BLOCKED_BY_ORB) or shows it as a broken image: either way the request was made.
  page.on('requestfinished', (r) => void (r.url().startsWith(APP_ORIGIN) && reached.add(r.url())));
  page.on('requestfailed', (r) => void (r.url().startsWith(APP_ORIGIN) && reached.add(r.url())));
  try {
    await page.goto(`http://127.0.0.1:${(lure.address() as AddressInfo).port}/lure`, { waitUntil: 'load' });
    await expect.poll(() => reached.size).toBe(reads.length);
  } finally {
    lure.close();
  }

  // The visitor then spends a link from the app's own page: answered on its merits (404 for this
  // made-up token), not 429 for attempts the other site spent.
  const spend = await request.post('/api/trpc/account.joinWithInvitation', {
    headers: { origin: APP_ORIGIN, 'content-type': 'application/json' },
    data: JSON.stringify({ token: `awi_${'s'.repeat(43)}`, display_name: 'Visitor', password: 'a long enough password' }),
  });
  expect(spend.status()).toBe(404);
});

test('another site’s form cannot spend a link for the visitor (403, nothing counted)', async ({ request }) => {
  const spend = await request.post('/api/trpc/account.joinWithInvitation', {
    headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
    data: JSON.stringify({ token: `awi_${'t'.repeat(43)}`, display_name: 'Visitor', password: 'a long enough password' }),
  });
  expect(spend.status()).toBe(403);
});
