/** Registering an upstream MCP server for a gateway test, as an owner's key does (POST /mcp-servers). */
import { expect } from 'vitest';
import type { McpGuard } from '@/db/schema';
import type { TestApp } from './app';

export interface ServerInput {
  name: string;
  url: string;
  headers?: Record<string, string>;
  guards?: McpGuard[];
  default_mode?: 'allow' | 'ask' | 'deny';
  timeout_ms?: number;
}

/** The registered server's id. */
export async function registerServer(app: TestApp, input: ServerInput, key = app.ws.apiKey): Promise<string> {
  const res = await app.request('POST', '/mcp-servers', { key, body: input });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id as string;
}
