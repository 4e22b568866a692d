/**
 * The work queue and the lists over real sockets, through scripts/serve.mjs (keep-alive requests
 * from Playwright's client): paging by cursor, ETag and If-Match as headers on the wire, twenty
 * agents starting one task at once, and the workspace switch refusing a write from another origin.
 */
import { randomUUID } from 'node:crypto';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { APP_ORIGIN, fixture, signIn } from './support';

const auth = () => ({ Authorization: `Bearer ${fixture().apiKey}` });

async function call(request: APIRequestContext, method: string, url: string, data?: unknown, headers: Record<string, string> = {}) {
  const res = await request.fetch(`/api/v1${url}`, {
    method,
    headers: { ...auth(), ...(data === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  return { status: res.status(), headers: res.headers(), body: await res.json() };
}

test('GET /tasks pages an agent’s tasks once each; ETag and If-Match travel as headers', async ({ request }) => {
  const agent = `e2e-agent-${randomUUID().slice(0, 8)}`;
  const ids: string[] = [];
  for (const priority of ['low', 'urgent', 'medium']) {
    const made = await call(request, 'POST', '/work', { title: `queued ${priority}`, priority });
    expect(made.status).toBe(201);
    ids.push(made.body.data.taskId);
    expect((await call(request, 'PATCH', `/tasks/${made.body.data.taskId}`, { agent_id: agent })).status).toBe(200);
  }
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await call(request, 'GET', `/tasks?agent_id=${agent}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(page.status).toBe(200);
    expect(page.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(page.headers['content-type']).toContain('application/json');
    seen.push(...page.body.data.map((t: { id: string }) => t.id));
    cursor = page.body.meta.nextCursor;
  } while (cursor);
  // Each once, by priority: urgent, medium, low.
  expect(seen).toEqual([ids[1], ids[2], ids[0]]);

  const read = await call(request, 'GET', `/tasks/${ids[0]}`);
  expect(read.headers.etag).toBe(`"${read.body.data.task.aggregateVersion}"`);
  const stale = await call(request, 'PATCH', `/tasks/${ids[0]}`, { title: 'too late' }, { 'If-Match': '"1"' });
  expect(stale.status).toBe(412);
  expect(stale.body.error).toMatchObject({ code: 'precondition_failed', requestId: stale.headers['x-request-id'] });
  const fresh = await call(request, 'PATCH', `/tasks/${ids[0]}`, { title: 'in time' }, { 'If-Match': read.headers.etag! });
  expect(fresh.status).toBe(200);
  expect(fresh.headers.etag).toBe(`"${Number(read.body.data.task.aggregateVersion) + 1}"`);
});

test('twenty agents start one ready task at once through the server: one 201, nineteen 409', async ({ request }) => {
  const made = await call(request, 'POST', '/work', { title: `contested ${randomUUID().slice(0, 6)}`, priority: 'urgent' });
  const taskId = made.body.data.taskId as string;
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => call(request, 'POST', '/runs', { task_id: taskId, agent_id: `racer-${i}` })),
  );
  expect(results.filter((r) => r.status === 201)).toHaveLength(1);
  const refused = results.filter((r) => r.status === 409);
  expect(refused).toHaveLength(19);
  for (const r of refused) expect(r.body.error.code).toBe('invalid_state_transition');

  const runs = await call(request, 'GET', `/runs?task_id=${taskId}`);
  expect(runs.body.data).toHaveLength(1);
  const receipts = await call(request, 'GET', `/receipts?task_id=${taskId}`);
  expect(receipts.body.data).toEqual([expect.objectContaining({ task_id: taskId, status: 'completed' })]);
  const initiatives = await call(request, 'GET', '/initiatives?limit=100');
  const inbox = initiatives.body.data.find((i: { is_inbox: boolean }) => i.is_inbox);
  expect(inbox.task_counts.in_progress).toBeGreaterThanOrEqual(1);
  const ready = await call(request, 'GET', '/tasks?ready=true&limit=100');
  expect(ready.body.data.map((t: { id: string }) => t.id)).not.toContain(taskId);
});

test('the workspace switch takes a form only from the app’s own pages, and only to one of the user’s workspaces', async ({ page }) => {
  await signIn(page, fixture().users.owner);
  const form = { workspace: fixture().workspaceId, return: '/decisions' };
  const crossSite = await page.request.post('/workspaces/switch', { form, headers: { Origin: 'https://evil.example' }, maxRedirects: 0 });
  expect(crossSite.status()).toBe(403);
  expect(crossSite.headers()['set-cookie'] ?? '').not.toContain('aws-workspace');
  const own = await page.request.post('/workspaces/switch', { form, headers: { Origin: APP_ORIGIN }, maxRedirects: 0 });
  expect(own.status()).toBe(303);
  expect(own.headers()['set-cookie']).toContain(`aws-workspace=${fixture().workspaceId}`);
  // Not a member of the other workspace: redirected, no cookie.
  const foreign = await page.request.get(`/workspaces/switch?to=${fixture().otherWorkspaceId}&return=/decisions`, { maxRedirects: 0 });
  expect(foreign.status()).toBe(303);
  expect(foreign.headers()['set-cookie'] ?? '').not.toContain('aws-workspace');
  // An outside return address is not followed; the Location is a path, resolved on the address the browser used.
  const away = await page.request.get(`/workspaces/switch?to=${fixture().workspaceId}&return=//evil.example/x`, { maxRedirects: 0 });
  expect(away.headers().location).toMatch(/^\/workspaces\/switch\/confirm\?/);
  expect(new URL(away.headers().location!, APP_ORIGIN).origin).toBe(APP_ORIGIN);
});
