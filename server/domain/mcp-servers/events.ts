/**
 * The upstream MCP servers' slice of the event registry. The servers are not a projection (their
 * headers are sealed, their URL may carry a secret): nothing reads these payloads back. No event
 * holds a header's value or the URL, only where the URL goes and its digest (url-target.ts), the
 * header names, and each tool's name with the digest of its input schema.
 */
import type { GuardMode, McpGuard } from '@/db/schema';
import { writeOnly } from '@/server/ledger/event-types';
import { unprojected, type RulesOf } from '../projection';
import type { UrlTarget } from '../url-target';

/** A tool as events record it: the upstream's name and `sha256:` + hex SHA-256 of the JCS of its input schema. */
export type ToolDigest = {
  name: string;
  schema_digest: string;
};

/** What a server is set to do, as its events record it. */
// A type, not an interface: a payload must be assignable to a record of its fields.
type ServerSettings = {
  name: string;
  target: UrlTarget;
  header_names: string[];
  guards: McpGuard[];
  default_mode: GuardMode;
  timeout_ms: number;
};

export const mcpServerEvents = {
  /** An owner registered an upstream server (POST /mcp-servers), with the tools it listed then. */
  'mcp_server.registered': writeOnly<{ id: string } & ServerSettings & { tools: ToolDigest[] }>()('mcp_server'),
  /**
   * An owner changed it (PATCH): only what changed. `header_names` appears whenever the headers
   * were replaced, their values changed even where the names did not.
   */
  'mcp_server.updated': writeOnly<{ id: string } & Partial<ServerSettings>>()('mcp_server'),
  'mcp_server.removed': writeOnly<{ id: string; name: string }>()('mcp_server'),
  /**
   * Its tools as listed now differ from those kept (a refresh, a new URL, the upstream's
   * notifications/tools/list_changed): all of them, and the names added, removed and changed (a
   * different input schema, description, title or annotations).
   */
  'mcp_server.tools_changed': writeOnly<{
    id: string;
    name: string;
    tools: ToolDigest[];
    added: string[];
    removed: string[];
    changed: string[];
  }>()('mcp_server'),
};

export const mcpServerRules: RulesOf<typeof mcpServerEvents> = {
  'mcp_server.registered': unprojected,
  'mcp_server.updated': unprojected,
  'mcp_server.removed': unprojected,
  'mcp_server.tools_changed': unprojected,
};
