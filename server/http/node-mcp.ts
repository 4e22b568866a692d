/**
 * /mcp of the process's runtime, for scripts/serve.mjs (handed over by instrumentation.ts beside
 * the /api/v1 handler): the MCP endpoint (server/mcp/http.ts) over its own REST transport.
 * Made on first use, so a process that serves no MCP request holds no MCP state.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRestHandler } from '@/server/api/rest';
import { createMcpHandler, type McpHandler } from '@/server/mcp/http';
import { getRuntime } from '@/server/runtime';

let handler: McpHandler | null = null;

/** Serves one /mcp request; never throws. */
export function handleMcpRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
  handler ??= createMcpHandler({ runtime: getRuntime, handle: createRestHandler({ runtime: getRuntime }) });
  return handler(req, res);
}

/** Ends MCP waits (each answers its decision as it stands) and closes the sessions: the service is stopping. */
export async function endMcpSessions(): Promise<void> {
  await handler?.close();
}
