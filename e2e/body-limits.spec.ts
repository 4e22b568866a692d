/**
 * Every body the real server (scripts/serve.mjs) reads has a limit, enforced while reading: 64 MiB
 * sent to each endpoint that needs no credential, declared by Content-Length or streamed in chunks,
 * is refused with 413 (or the connection closed once the bounded drain gives up), never read in
 * full; and the server answers the next request. Before the limit, Next read such bodies whole
 * (50 MiB: +170 MB and a 400; 200 MiB: out of heap, the process gone).
 */
import { expect, test } from '@playwright/test';
import { Agent, request } from 'undici';
import { APP_ORIGIN } from './support';

const origin = APP_ORIGIN;
const MiB = 1024 * 1024;

/** Sends 64 MiB of `x` in 64 KiB pieces, counting what the server took before it answered or cut. */
async function* sixtyFourMiB(sent: { bytes: number }): AsyncIterable<Buffer> {
  const piece = Buffer.alloc(64 * 1024, 0x78);
  for (let i = 0; i < 1024; i++) {
    sent.bytes += piece.length;
    yield piece;
  }
}

/** Where bodies go without a credential: tRPC (a mutation and a query), next-auth, a route handler, a page. */
const endpoints: [method: 'POST' | 'GET', path: string, contentType: string][] = [
  ['POST', '/api/trpc/account.joinWithInvitation', 'application/json'],
  ['POST', '/api/trpc/account.completeSetup', 'application/json'],
  ['GET', '/api/trpc/account.setupLink?input=%7B%7D', 'application/json'],
  ['POST', '/api/auth/callback/credentials', 'application/x-www-form-urlencoded'],
  ['POST', '/api/auth/signout', 'application/x-www-form-urlencoded'],
  ['POST', '/workspaces/switch', 'application/x-www-form-urlencoded'],
  ['POST', '/signin', 'text/plain'],
  ['POST', '/api/v1/agent-work-receipts/validate', 'application/json'],
  ['POST', '/api/v1/work', 'application/json'],
];

for (const [method, path, contentType] of endpoints) {
  for (const declared of [true, false]) {
    test(`${method} ${path}: 64 MiB ${declared ? 'declared' : 'chunked'} is refused unread, then the server answers`, async () => {
      const agent = new Agent({ connections: 1 });
      const sent = { bytes: 0 };
      try {
        const outcome = await request(`${origin}${path}`, {
          method,
          headers: { 'content-type': contentType, ...(declared ? { 'content-length': String(64 * MiB) } : {}) },
          body: sixtyFourMiB(sent) as never,
          dispatcher: agent,
        }).then(
          async (res) => {
            const text = await res.body.text().catch(() => '');
            return { status: res.statusCode, text };
          },
          (err: Error) => ({ status: 0, text: String(err) }),
        );
        // 413 in the contract's envelope, or (a client still sending past the drain's bound) a cut
        // connection; never an answer that read the whole body.
        if (outcome.status !== 0) {
          expect(outcome.status, outcome.text.slice(0, 200)).toBe(413);
          // The public validator answers in its own shape (docs/contract.md §1.6: input.too_large).
          expect(JSON.parse(outcome.text).error.code).toBe(path.includes('/validate') ? 'input.too_large' : 'payload_too_large');
        }
        expect(sent.bytes, 'bytes the client got to send').toBeLessThan(32 * MiB);
      } finally {
        await agent.close().catch(() => undefined);
      }
      const health = await request(`${origin}/api/v1/health`);
      expect(health.statusCode).toBe(200);
      await health.body.dump();
      const page = await request(`${origin}/signin`);
      expect(page.statusCode).toBe(200);
      await page.body.dump();
    });
  }
}

test('a body within the limit still reaches Next: a tRPC call is answered by its procedure', async () => {
  const res = await request(`${origin}/api/trpc/account.joinWithInvitation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify({ token: 'aws_inv_unknown', display_name: 'Nobody', password: 'long-enough-password-1' }),
  });
  const text = await res.body.text();
  // The procedure ran and said what it thought of the token (not the 413 or 400 of a lost body).
  expect(res.statusCode, text.slice(0, 300)).toBe(404);
  expect(text).toMatch(/link/i);
});
