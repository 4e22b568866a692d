/**
 * The upstream tools an agent sees at /mcp: every tool of every MCP server its workspace fronts,
 * named `<server>__<tool>` (a server's name is a slug without `_`, so the first `__` splits the
 * two), with the upstream's own description and input schema, as the server's row last listed
 * them. Reading the row is also where the gateway learns a server's guards, timeout and where it
 * is; its headers are opened only to call it.
 */
import { and, asc, eq } from 'drizzle-orm';
import type { Executor } from '@/db';
import { mcpServers, type UpstreamTool } from '@/db/schema';
import { decryptSecret } from '@/server/keys/cipher';
import type { UpstreamKey, UpstreamTarget } from './upstream';

const SEPARATOR = '__';

export type GatewayServer = typeof mcpServers.$inferSelect;

/** The name an agent calls an upstream tool by. */
export const exposedName = (server: string, tool: string) => `${server}${SEPARATOR}${tool}`;

/** The server's and the tool's names in an exposed name; null for a name of the service's own. */
function splitExposedName(name: string): { server: string; tool: string } | null {
  const at = name.indexOf(SEPARATOR);
  if (at <= 0) return null;
  return { server: name.slice(0, at), tool: name.slice(at + SEPARATOR.length) };
}

/** The workspace's servers, by name. */
export function gatewayServers(db: Executor, workspaceId: string): Promise<GatewayServer[]> {
  return db.select().from(mcpServers).where(eq(mcpServers.workspaceId, workspaceId)).orderBy(asc(mcpServers.name));
}

async function readServer(db: Executor, workspaceId: string, name: string): Promise<GatewayServer | undefined> {
  const [server] = await db
    .select()
    .from(mcpServers)
    .where(and(eq(mcpServers.workspaceId, workspaceId), eq(mcpServers.name, name)));
  return server;
}

/** Servers this process keeps read at once (each a few kilobytes to a few hundred: its tools' schemas). */
const MAX_KEPT = 1_000;

/**
 * The servers as this process last read them, by workspace and name, so that a call does not read
 * its server's row (its tools' schemas with it) again each time. What a call decides on a row kept
 * here is checked when it is recorded: the transaction that records it checks, in the same flight,
 * that the server is still at the version read (server/domain/tool-calls/calls.ts ServerChanged),
 * and a call decided on an older one is decided again on a fresh read. A tool the kept row does not
 * have is looked for in a fresh read before the call is told there is none.
 */
export class ServerCatalog {
  private readonly kept = new Map<string, GatewayServer>();

  /** The server and tool `name` names (`<server>__<tool>`) in the workspace; null when either is not there. */
  async tool(
    db: Executor,
    workspaceId: string,
    name: string,
    fresh = false,
  ): Promise<{ server: GatewayServer; tool: UpstreamTool } | null> {
    const parts = splitExposedName(name);
    if (!parts) return null;
    const key = `${workspaceId}/${parts.server}`;
    let server = fresh ? undefined : this.kept.get(key);
    if (!server?.tools.some((t) => t.name === parts.tool)) {
      server = await readServer(db, workspaceId, parts.server);
      this.kept.delete(key);
      if (server) {
        if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
        this.kept.set(key, server);
      }
    }
    const tool = server?.tools.find((t) => t.name === parts.tool);
    return server && tool ? { server, tool } : null;
  }
}

/** The upstream tools as tools/list shows them, beside the service's own. */
export function listedTools(servers: readonly GatewayServer[]) {
  return servers.flatMap((server) =>
    server.tools.map((tool) => ({
      name: exposedName(server.name, tool.name),
      ...(tool.title !== undefined && { title: tool.title }),
      description: `${tool.description ?? tool.name} (Through the gateway: the tool ${tool.name} of the MCP server ${server.name}.)`,
      inputSchema: tool.input_schema,
      ...(tool.annotations !== undefined && { annotations: tool.annotations }),
    })),
  );
}

/** Where the server is and what it is sent, its headers opened with the instance's secret. */
export function targetOf(server: GatewayServer, secret: string): UpstreamTarget {
  const headers = server.headersCipher ? (JSON.parse(decryptSecret(secret, server.headersCipher)) as Record<string, string>) : {};
  return { url: server.url, headers, timeoutMs: server.timeoutMs };
}

/** The connection a server's calls share, renewed when its settings change. */
export const upstreamKeyOf = (server: GatewayServer): UpstreamKey => ({
  workspaceId: server.workspaceId,
  serverId: server.id,
  version: server.version,
});
