/**
 * The access log (docs/contract.md §13.3): one JSON line per API request, with its request id, operation (the
 * route template), status, duration, bytes, and who called (workspace and key, or user), and
 * nothing that could carry a secret: no raw path, no query, no body, no credential. (That no line
 * of the whole suite holds a credential: test/support/log-capture.ts, in every integration file.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app';
import { capturedLogLines } from '../support/log-capture';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const lineOf = (requestId: string | null) => capturedLogLines().find((l) => l.msg === 'request' && l.requestId === requestId);

it('writes a line per request: id, operation, status, duration, bytes, workspace and key; no path, query or body', async () => {
  const created = await app.request('POST', '/work', { body: { title: 'logged, not its title' } });
  expect(created.status).toBe(201);
  const line = lineOf(created.headers.get('x-request-id'));
  expect(line).toMatchObject({
    level: 'info',
    operation: 'POST /work',
    status: 201,
    bytes: Buffer.byteLength(created.text),
    workspaceId: app.ws.workspaceId,
    keyId: app.ws.apiKeyId,
  });
  expect(line!.ms).toEqual(expect.any(Number));
  expect(JSON.stringify(line)).not.toContain('logged, not its title');

  const id = created.body.data.taskId as string;
  const read = await app.request('GET', `/tasks/${id}?include=secret-looking-query`);
  const readLine = lineOf(read.headers.get('x-request-id'));
  expect(readLine).toMatchObject({ operation: 'GET /tasks/{id}' });
  expect(JSON.stringify(readLine)).not.toContain(id);
  expect(JSON.stringify(readLine)).not.toContain('secret-looking-query');
});

it('names the user for a signed-in human, and logs refused requests too', async () => {
  const member = await app.member('approver');
  const listed = await app.request('GET', '/decisions', { session: member.session });
  expect(listed.status).toBe(200);
  expect(lineOf(listed.headers.get('x-request-id'))).toMatchObject({ operation: 'GET /decisions', status: 200, userId: member.userId });

  const refused = await app.request('GET', '/workspace', { key: 'awk_not-a-real-key-but-shaped-like-one-0123456789' });
  expect(refused.status).toBe(401);
  const line = lineOf(refused.headers.get('x-request-id'));
  expect(line).toMatchObject({ operation: 'GET /workspace', status: 401, workspaceId: null, keyId: null });
  expect(JSON.stringify(line)).not.toContain('awk_');
});
