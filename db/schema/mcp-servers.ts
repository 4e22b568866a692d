/**
 * The MCP servers a workspace fronts (POST /mcp-servers): the service calls their tools on the
 * agents' behalf (server/gateway), so the credential an upstream asks for lives only here, and no
 * agent reaches a guarded tool without a ruling. What the upstream offers is kept as it was last
 * listed (registration, refresh, its tools/list_changed notification): the gateway lists and
 * guards those tools without asking the upstream at every tools/list.
 *
 * Not a projection: the headers are sealed under an instance secret and the URL may carry one, and
 * neither ever enters the ledger (its `mcp_server.*` events carry where the URL goes, a digest of
 * it, the header names and the tools' schema digests).
 */
import { sql } from 'drizzle-orm';
import { integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { aggregateColumns, ts } from './columns';
import type { DecisionUrgency } from './decisions';
import type { DecisionPolicy } from './decision-policy';

export const guardModes = ['allow', 'ask', 'deny'] as const;
export type GuardMode = (typeof guardModes)[number];

/** One guard: the first whose glob matches an upstream tool's name says what a call of it does. */
export interface McpGuard {
  /** A glob over the upstream tool's name (`*` any run of characters, `?` one). */
  tool: string;
  mode: GuardMode;
  /** ask: the decision's urgency (default standard). */
  urgency?: DecisionUrgency;
  /** ask: approving takes the approver's passkey. */
  require_passkey?: boolean;
  /** ask: who must approve, as POST /decisions takes it; without one, the workspace's rules choose. */
  policy?: DecisionPolicy;
  /** ask: whether the approver may change the arguments before approving (default true). */
  editable?: boolean;
}

/** An upstream tool as the upstream listed it, and the digest of its input schema. */
export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  input_schema: Record<string, unknown>;
  /** `sha256:` + hex SHA-256 of the input schema's RFC 8785 JSON: what an event records of it. */
  schema_digest: string;
  annotations?: Record<string, unknown>;
}

export const mcpServers = pgTable(
  'mcp_servers',
  {
    ...aggregateColumns(),
    /** A slug, unique in the workspace: its tools appear as `<name>__<tool>` at /mcp. */
    name: text('name').notNull(),
    /** The upstream's Streamable HTTP endpoint. */
    url: text('url').notNull(),
    /** The headers sent with every request to it (an upstream bearer token), sealed (server/keys/cipher.ts); null: none. */
    headersCipher: text('headers_cipher'),
    /** Their names, shown back; their values never are. */
    headerNames: text('header_names')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    guards: jsonb('guards')
      .$type<McpGuard[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
    /** What a call of a tool no guard matches does. */
    defaultMode: text('default_mode', { enum: guardModes }).notNull().default('ask'),
    /** How long a call may take upstream before the agent is told it failed. */
    timeoutMs: integer('timeout_ms').notNull().default(60_000),
    /** The tools as last listed, by name. */
    tools: jsonb('tools')
      .$type<UpstreamTool[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
    toolsListedAt: ts('tools_listed_at'),
    /** Why the last listing failed (the tools kept are the listing before it); null after one that worked. */
    lastError: text('last_error'),
  },
  (t) => [uniqueIndex('mcp_servers_name_idx').on(t.workspaceId, t.name)],
);
