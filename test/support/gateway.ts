/**
 * Registering an upstream MCP server for a gateway test: listed as registration lists it, and kept
 * as a server's row is (its headers sealed).
 */
import { randomUUID } from 'node:crypto';
import type { McpGuard } from '@/db/schema';
import { mcpServers } from '@/db/schema';
import { listUpstreamTools } from '@/server/gateway/upstream';
import { encryptSecret } from '@/server/keys/cipher';
import type { TestApp } from './app';

export interface ServerInput {
  name: string;
  url: string;
  headers?: Record<string, string>;
  guards?: McpGuard[];
  default_mode?: 'allow' | 'ask' | 'deny';
  timeout_ms?: number;
}

export async function registerServer(app: TestApp, input: ServerInput): Promise<string> {
  const headers = input.headers ?? {};
  const timeoutMs = input.timeout_ms ?? 60_000;
  const tools = await listUpstreamTools({ url: input.url, headers, timeoutMs }, ['127.0.0.1']);
  const id = randomUUID();
  await app.runtime.db.insert(mcpServers).values({
    id,
    workspaceId: app.ws.workspaceId,
    name: input.name,
    url: input.url,
    headersCipher: Object.keys(headers).length > 0 ? encryptSecret(app.runtime.secrets.webhook, JSON.stringify(headers)) : null,
    headerNames: Object.keys(headers),
    guards: input.guards ?? [],
    defaultMode: input.default_mode ?? 'ask',
    timeoutMs,
    tools,
    toolsListedAt: new Date(),
  });
  return id;
}
