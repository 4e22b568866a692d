/**
 * examples/upstream-server.ts run as its guide runs it (a process, with its own token), fronted by
 * the service as the guide says (POST /mcp-servers with the token as a header, guards for two of its
 * tools), and called through /mcp by the SDK's client: the read is allowed, the transfer waits for a
 * human and runs as approved, the closing is refused, and the example prints exactly the calls it
 * ran. Without the token the example refuses everyone: only the service can call it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestApp, type TestApp, type TestMember } from '../support/app';
import { registerServer } from '../support/gateway';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOKEN = 'example-upstream-token';

let app: TestApp;
let approver: TestMember;
let example: ChildProcess;
let out = '';
let url: string;
let client: Client;

beforeAll(async () => {
  app = await startTestApp({ MCP_UPSTREAM_ALLOW_HOSTS: '127.0.0.1' });
  approver = await app.member('approver');
  example = spawn(process.execPath, ['--import', 'tsx', 'examples/upstream-server.ts'], {
    cwd: ROOT,
    env: { ...process.env, UPSTREAM_TOKEN: TOKEN, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  example.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  example.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  // It says where it listens once it does.
  const until = Date.now() + 30_000;
  while (!/listening on (\S+)/.test(out)) {
    if (Date.now() > until || example.exitCode !== null) throw new Error(`the example did not start: ${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  url = /listening on (\S+)/.exec(out)![1]!;
  client = new Client({ name: 'upstream-example-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', app.url), { requestInit: { headers: { Authorization: `Bearer ${app.ws.apiKey}` } } }),
  );
});
afterAll(async () => {
  await client?.close().catch(() => undefined);
  if (example && example.exitCode === null) {
    const exited = new Promise((resolve) => example.once('exit', resolve));
    example.kill('SIGTERM');
    await exited;
  }
  await app?.close();
});

const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>;

it('refuses a caller without its token: only the service, which holds it, reaches its tools', async () => {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  expect(res.status).toBe(401);
});

it('reads no body past its limit: 413 for a request of 2 MiB, even with its token', async () => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }),
  }).catch((err: unknown) => err);
  // The example answers 413 and closes: the client sees the answer, or the closed connection while still sending.
  if (res instanceof Response) expect(res.status).toBe(413);
  else expect(String((res as Error).cause ?? res)).toMatch(/ECONNRESET|EPIPE|other side closed|socket/i);
});

it('fronted as its guide says: balance runs, transfer waits for a human and runs as approved, close_account never runs', async () => {
  await registerServer(app, {
    name: 'bank',
    url,
    headers: { Authorization: `Bearer ${TOKEN}` },
    guards: [
      { tool: 'balance', mode: 'allow' },
      { tool: 'close_account', mode: 'deny' },
    ],
  });
  const names = (await client.listTools()).tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['bank__balance', 'bank__transfer', 'bank__close_account']));

  const balance = await call('bank__balance', { account: 'alice' });
  expect(balance.isError).toBeFalsy();
  expect(balance.structuredContent).toEqual({ account: 'alice', balance: 1000 });

  const closed = await call('bank__close_account', { account: 'bob' });
  expect(closed.isError).toBe(true);

  const transfer = call('bank__transfer', { from: 'alice', to: 'bob', amount: 400 });
  let id: string | undefined;
  await expect
    .poll(async () => {
      const list = await app.request('GET', '/decisions?status=pending&limit=100');
      id = (list.body.data as { id: string; title: string }[]).find((d) => d.title === 'transfer on bank')?.id;
      return id;
    })
    .toBeTruthy();
  const approved = await app.request('POST', `/decisions/${id}/approve`, {
    session: approver.session,
    body: { arguments: { from: 'alice', to: 'bob', amount: 40 } },
  });
  expect(approved.status).toBe(200);
  const moved = await transfer;
  expect(moved.isError).toBeFalsy();
  expect(moved.structuredContent).toEqual({ from: 'alice', to: 'bob', amount: 40 });

  // What the example ran, in order: exactly these calls, with the approved arguments.
  const ran = out.split('\n').filter((line) => /^(balance|transfer|close_account) /.test(line));
  expect(ran).toEqual(['balance {"account":"alice"}', 'transfer {"from":"alice","to":"bob","amount":40}']);
});
