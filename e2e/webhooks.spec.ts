/**
 * Webhooks from the owners' settings page to a receiver: the real server's dispatcher delivers a
 * test event, signed so that the standardwebhooks package verifies it, and the page lists the attempt.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { Webhook } from 'standardwebhooks';
import { agent, fixture, signIn } from './support';

test('an owner adds an endpoint, sends a test event, sees it delivered and signed, and changes what it subscribes to', async ({ page }) => {
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  try {
    await signIn(page, fixture().users.owner);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill(url);
    await page.getByLabel(/Event types/).fill('decision.approved');
    await page.getByLabel('Description').fill('e2e receiver');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await page.getByTestId('signing-secret').textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();

    const endpoint = page.getByRole('region', { name: `Endpoint ${url}` });
    await endpoint.getByRole('button', { name: 'Send test event' }).click();
    await expect(page.getByRole('status')).toContainText('Test event');
    await expect.poll(() => received.length).toBe(1);
    const event = new Webhook(secret).verify(received[0]!.body, received[0]!.headers as Record<string, string>) as { eventType: string };
    expect(event.eventType).toBe('webhook_endpoint.test');

    await expect
      .poll(async () => {
        await page.reload();
        return endpoint.getByRole('cell', { name: '204 delivered' }).count();
      })
      .toBe(1);

    // Changed in the page, as PATCH /webhooks/{id} would.
    await endpoint.getByText('Change', { exact: true }).click();
    await endpoint
      .getByRole('form', { name: `Change ${url}` })
      .getByLabel('Event types')
      .fill('decision.*, run.completed');
    await endpoint.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByRole('status')).toContainText(`Saved the endpoint ${url}`);
    await expect(endpoint).toContainText('Events: decision.*, run.completed');
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
});

/** The REST calls an agent makes, through the real server over its socket. */
async function call(request: APIRequestContext, method: string, url: string, data?: unknown, headers: Record<string, string> = {}) {
  const response = await request.fetch(`/api/v1${url}`, {
    method,
    headers: { Authorization: `Bearer ${fixture().apiKey}`, 'Content-Type': 'application/json', ...headers },
    data: data === undefined ? undefined : JSON.stringify(data),
  });
  return { status: response.status(), headers: response.headers(), body: await response.json() };
}

test('an agent manages an endpoint over REST through the real server: create, test, deliveries, If-Match, delete', async ({ request }) => {
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end('thanks');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/agent`;
  try {
    const created = await call(request, 'POST', '/webhooks', { url, event_types: ['work.created'] });
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data;
    const work = await agent(request, 'POST', '/work', { title: 'Delivered over the real server' });
    expect(work.status).toBe(201);
    await expect.poll(() => received.length).toBe(1);
    const event = new Webhook(secret).verify(received[0]!.body, received[0]!.headers as Record<string, string>) as { aggregateId: string };
    expect(event.aggregateId).toBe(work.body.data.taskId);

    await expect.poll(async () => (await call(request, 'GET', `/webhooks/${id}/deliveries`)).body.data.length).toBe(1);
    const [delivery] = (await call(request, 'GET', `/webhooks/${id}/deliveries`)).body.data;
    expect(delivery).toMatchObject({ succeeded: true, status_code: 200, attempt: 1, response_excerpt: 'thanks' });

    const read = await call(request, 'GET', `/webhooks/${id}`);
    expect(read.headers.etag).toBe('"1"');
    expect((await call(request, 'PATCH', `/webhooks/${id}`, { description: 'mine' }, { 'If-Match': '"1"' })).status).toBe(200);
    const stale = await call(request, 'PATCH', `/webhooks/${id}`, { description: 'again' }, { 'If-Match': '"1"' });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('precondition_failed');
    expect((await call(request, 'DELETE', `/webhooks/${id}`, {})).status).toBe(200);
    expect((await call(request, 'GET', `/webhooks/${id}`)).status).toBe(404);
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
});
