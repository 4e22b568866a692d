/**
 * The stdio MCP server in the form MCP clients are given (`node <repository>/scripts/tool.mjs mcp
 * --url <service>`: no npm banner, no inner `--` for a client to drop), started as a process by the
 * SDK's own stdio client, as Claude Code or the MCP Inspector start it, from another directory:
 * the tools of /mcp over stdin/stdout, with the key from AWS_API_KEY; a ruling made while
 * request_decision waits reaches the client through the bridge; a session the service forgot is
 * opened again without the client noticing; a wrong key is refused.
 */
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestApp, type TestApp, type TestMember } from '../support/app';

let app: TestApp;
let approver: TestMember;
beforeAll(async () => {
  // Sessions idle for a second are closed by the service (its sweep runs as often as that).
  app = await startTestApp({ MCP_SESSION_IDLE_MS: '1000' });
  approver = await app.member('approver');
});
afterAll(async () => {
  await app?.close();
});

async function stdioClient(key: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: 'node',
    args: [path.resolve('scripts', 'tool.mjs'), 'mcp', '--url', app.url],
    cwd: os.tmpdir(),
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', AWS_API_KEY: key },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'stdio-test', version: '1' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

describe('node scripts/tool.mjs mcp (stdio)', () => {
  it('lists the tools, creates work, and waits for a ruling made meanwhile', async () => {
    const { client } = await stdioClient(app.ws.apiKey);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['create_work', 'request_decision', 'verify_ledger']));
      const created = (await client.callTool({ name: 'create_work', arguments: { title: 'over stdio' } })) as CallToolResult;
      expect(created._meta?.['aws/status']).toBe(201);
      const taskId = (created.structuredContent as { data: { taskId: string } }).data.taskId;
      const rest = await app.request('GET', `/tasks/${taskId}`);
      expect(rest.body.data.task.title).toBe('over stdio');

      const waiting = client.callTool({
        name: 'request_decision',
        arguments: { title: 'Stdio approval?', wait_seconds: 30 },
      }) as Promise<CallToolResult>;
      let id: string | undefined;
      for (let i = 0; i < 200 && !id; i++) {
        const list = await app.request('GET', '/decisions?status=pending&limit=100');
        id = (list.body.data as { id: string; title: string }[]).find((d) => d.title === 'Stdio approval?')?.id;
        if (!id) await new Promise((r) => setTimeout(r, 50));
      }
      expect(id).toBeDefined();
      const approved = await app.request('POST', `/decisions/${id}/approve`, { session: approver.session, body: {} });
      expect(approved.status).toBe(200);
      const at = Date.now();
      const result = await waiting;
      expect(Date.now() - at).toBeLessThan(1000);
      expect(result.structuredContent).toMatchObject({ decision: { id, status: 'approved' }, wait: { ended: 'ruled' } });
    } finally {
      await client.close();
    }
  });

  it('a session the service closed is opened again behind the client’s back', async () => {
    const { client, stderr } = await stdioClient(app.ws.apiKey);
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      // Idle past MCP_SESSION_IDLE_MS: the service closes the session.
      await new Promise((r) => setTimeout(r, 2_500));
      const result = (await client.callTool({ name: 'verify_ledger', arguments: {} })) as CallToolResult;
      expect(result.structuredContent).toMatchObject({ data: { verified: true } });
      expect(stderr()).toMatch(/a new one is open/);
    } finally {
      await client.close();
    }
  });

  it('a wrong key is refused with the service’s 401', async () => {
    await expect(stdioClient('awk_wrong')).rejects.toThrow(/401|unauthorized|unknown or revoked/i);
  });
});
