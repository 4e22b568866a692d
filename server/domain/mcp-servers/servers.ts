/**
 * The upstream MCP servers a workspace fronts (POST/GET/PATCH/DELETE /mcp-servers, and refresh):
 * registered, read, changed, removed, their tools replaced by a new listing. Each change is a
 * ledger event in the same transaction (events.ts), taken under the workspace's ledger lock so
 * that the name and count checks hold until COMMIT. The headers an upstream needs are sealed
 * under the instance's secret (server/keys/cipher.ts) and leave this module only to be sent to
 * the upstream (upstreamOf); no event, view or log line holds their values.
 *
 * The URL is checked and the tools listed by the caller before the transaction (server/gateway):
 * both go over the network, and no transaction waits on it.
 */
import { randomUUID } from 'node:crypto';
import { and, desc, eq } from 'drizzle-orm';
import type { Executor, Tx } from '@/db';
import { mcpServers, type GuardMode, type McpGuard, type UpstreamTool } from '@/db/schema';
import { AppError } from '@/server/errors';
import { decryptSecret, encryptSecret } from '@/server/keys/cipher';
import { canonicalJson } from '@/server/ledger/canonical';
import { appendEvents, lockWorkspaceLedger, type NewEvent } from '@/server/ledger/append';
import type { PayloadOf } from '@/server/ledger/event-types';
import type { Actor } from '../actor';
import { approvalsInAll, canStillBeMet, resolvePolicy, type PolicyInput } from '../decisions/policy';
import { checkNamed, membersOf } from '../decisions/workspace-policy';
import { olderThan, type CreatedKey } from '../paging';
import { targetForEvents } from '../url-target';
import type { ToolDigest } from './events';
import { guardFor } from './guards';

/**
 * Servers one workspace may front: each is listed at registration and refresh, and each of its
 * tools joins every agent's tools/list at /mcp.
 */
export const MAX_SERVERS_PER_WORKSPACE = 20;

type ServerRow = typeof mcpServers.$inferSelect;

/** An upstream tool as the API shows it: as listed, with what a call of it does now. */
interface ToolView {
  name: string;
  title?: string;
  description?: string;
  input_schema: Record<string, unknown>;
  schema_digest: string;
  mode: GuardMode;
  /** The guard that decides it; null: none matches, the default mode does. */
  guard_index: number | null;
}

export interface McpServerView {
  id: string;
  workspace_id: string;
  name: string;
  url: string;
  header_names: string[];
  guards: McpGuard[];
  default_mode: GuardMode;
  timeout_ms: number;
  tools: ToolView[];
  tools_listed_at: string | null;
  last_error: string | null;
  aggregateVersion: number;
  created_at: string;
  updated_at: string;
}

function serverView(row: ServerRow): McpServerView {
  const server = { guards: row.guards, defaultMode: row.defaultMode };
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    name: row.name,
    url: row.url,
    header_names: row.headerNames,
    guards: row.guards,
    default_mode: row.defaultMode,
    timeout_ms: row.timeoutMs,
    tools: row.tools.map((t) => {
      const { mode, index } = guardFor(server, t.name);
      return {
        name: t.name,
        ...(t.title !== undefined ? { title: t.title } : {}),
        ...(t.description !== undefined ? { description: t.description } : {}),
        input_schema: t.input_schema,
        schema_digest: t.schema_digest,
        mode,
        guard_index: index,
      };
    }),
    tools_listed_at: row.toolsListedAt?.toISOString() ?? null,
    last_error: row.lastError,
    aggregateVersion: row.version,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** A guard as a request gives it: its policy in the short form POST /decisions takes. */
type GuardInput = Omit<McpGuard, 'policy'> & { policy?: PolicyInput };

const invalid = (path: string, message: string): never => {
  throw new AppError('validation_failed', message, { issues: [{ path, message }] });
};

/**
 * The guards as stored: each policy resolved to its full form and checked against the members now,
 * as a decision's own policy is when raised. (That urgency, passkey, policy and editable belong to
 * ask guards only is the request's rule: server/api/routers/mcp-servers/shared.ts.)
 */
async function resolveGuards(tx: Tx, workspaceId: string, guards: readonly GuardInput[]): Promise<McpGuard[]> {
  let members: Awaited<ReturnType<typeof membersOf>> | undefined;
  const resolved: McpGuard[] = [];
  for (const [i, { policy, ...guard }] of guards.entries()) {
    if (!policy) {
      resolved.push(guard);
      continue;
    }
    const full = resolvePolicy(policy);
    const path = `guards.${i}.policy`;
    if (approvalsInAll(full) > 1 && guard.editable !== false) {
      invalid(path, 'A call approved by several people cannot have editable arguments (each would approve others): set editable to false.');
    }
    members ??= await membersOf(tx, workspaceId);
    checkNamed(full, members, path);
    if (!canStillBeMet(full, [], members)) {
      invalid(
        path,
        `The policy cannot be met: it asks ${approvalsInAll(full)} approvals in all, and the workspace has not the members to give them.`,
      );
    }
    resolved.push({ ...guard, policy: full });
  }
  return resolved;
}

/** Headers as kept: sealed under `secretKey`, and their names; none at all as null and []. */
function sealHeaders(secretKey: string, headers: Record<string, string> | null): { headersCipher: string | null; headerNames: string[] } {
  if (!headers || Object.keys(headers).length === 0) return { headersCipher: null, headerNames: [] };
  return { headersCipher: encryptSecret(secretKey, JSON.stringify(headers)), headerNames: Object.keys(headers) };
}

function openHeaders(secretKey: string, cipher: string | null): Record<string, string> {
  return cipher === null ? {} : (JSON.parse(decryptSecret(secretKey, cipher)) as Record<string, string>);
}

const digests = (tools: readonly UpstreamTool[]): ToolDigest[] => tools.map((t) => ({ name: t.name, schema_digest: t.schema_digest }));

/**
 * How `next` differs from `kept`, by tool name: added, removed, and changed (any part of its
 * definition: input schema, title, description, annotations). Their order is not a change.
 */
function toolChanges(kept: readonly UpstreamTool[], next: readonly UpstreamTool[]) {
  const before = new Map(kept.map((t) => [t.name, canonicalJson(t)]));
  const after = new Map(next.map((t) => [t.name, canonicalJson(t)]));
  const added = [...after.keys()].filter((n) => !before.has(n));
  const removed = [...before.keys()].filter((n) => !after.has(n));
  const changed = [...after].filter(([n, text]) => before.has(n) && before.get(n) !== text).map(([n]) => n);
  return { added, removed, changed, any: added.length + removed.length + changed.length > 0 };
}

/**
 * Refuses a name another server of the workspace has (409 naming it) and a server past the
 * workspace's limit. Called before the upstream is listed (a fast answer) and again under the lock.
 */
export async function checkRoom(db: Executor, workspaceId: string, name: string, self?: string): Promise<void> {
  const rows = await db
    .select({ id: mcpServers.id, name: mcpServers.name })
    .from(mcpServers)
    .where(eq(mcpServers.workspaceId, workspaceId));
  const same = rows.find((r) => r.name === name && r.id !== self);
  if (same) throw new AppError('conflict', `An MCP server named ${name} is already registered here (${same.id}).`, { id: same.id });
  if (self === undefined && rows.length >= MAX_SERVERS_PER_WORKSPACE) {
    throw new AppError('conflict', `A workspace fronts at most ${MAX_SERVERS_PER_WORKSPACE} MCP servers; remove one first.`);
  }
}

export interface RegisterServerInput {
  name: string;
  /** Checked already (checkUpstreamUrl). */
  url: string;
  headers: Record<string, string> | null;
  guards: GuardInput[];
  defaultMode: GuardMode;
  timeoutMs: number;
  /** As the upstream listed them just now. */
  tools: UpstreamTool[];
}

/** Registers a server with the tools it listed. A name taken in the workspace, or a 21st server, is 409. */
export async function registerServer(tx: Tx, actor: Actor, input: RegisterServerInput, secretKey: string): Promise<McpServerView> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  await checkRoom(tx, actor.workspaceId, input.name);
  const guards = await resolveGuards(tx, actor.workspaceId, input.guards);
  const sealed = sealHeaders(secretKey, input.headers);
  const id = randomUUID();
  const now = new Date();
  await appendEvents(
    tx,
    actor,
    [
      {
        aggregateType: 'mcp_server',
        aggregateId: id,
        eventType: 'mcp_server.registered',
        payload: {
          id,
          name: input.name,
          target: targetForEvents(input.url),
          header_names: sealed.headerNames,
          guards,
          default_mode: input.defaultMode,
          timeout_ms: input.timeoutMs,
          tools: digests(input.tools),
        },
      },
    ],
    now,
  );
  const [row] = await tx
    .insert(mcpServers)
    .values({
      id,
      workspaceId: actor.workspaceId,
      name: input.name,
      url: input.url,
      ...sealed,
      guards,
      defaultMode: input.defaultMode,
      timeoutMs: input.timeoutMs,
      tools: input.tools,
      toolsListedAt: now,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return serverView(row!);
}

const noSuchServer = () => new AppError('not_found', 'No such MCP server in your workspace.');

async function lockedServer(tx: Tx, actor: Actor, id: string): Promise<ServerRow> {
  await lockWorkspaceLedger(tx, actor.workspaceId);
  const [row] = await tx
    .select()
    .from(mcpServers)
    .where(and(eq(mcpServers.id, id), eq(mcpServers.workspaceId, actor.workspaceId)))
    .for('update');
  if (!row) throw noSuchServer();
  return row;
}

/** What an upstream is called with: its URL, its headers opened, its timeout. Only for calling it. */
export interface Upstream {
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** The sealed headers as stored: a change made while the upstream was listed shows as another value. */
  headersCipher: string | null;
}

/** The server's upstream as it is called (404 outside the workspace). */
export async function upstreamOf(db: Executor, workspaceId: string, id: string, secretKey: string): Promise<Upstream> {
  const [row] = await db
    .select({ url: mcpServers.url, headersCipher: mcpServers.headersCipher, timeoutMs: mcpServers.timeoutMs })
    .from(mcpServers)
    .where(and(eq(mcpServers.id, id), eq(mcpServers.workspaceId, workspaceId)));
  if (!row) throw noSuchServer();
  return { ...row, headers: openHeaders(secretKey, row.headersCipher) };
}

/** A listing made outside the transaction, and the upstream it was made from (as upstreamOf read it). */
export interface Listing {
  tools: UpstreamTool[];
  from: Pick<Upstream, 'url' | 'headersCipher'>;
}

export interface UpdateServerInput {
  id: string;
  name?: string;
  /** Checked already (checkUpstreamUrl). */
  url?: string;
  /** The whole set replaced; null removes them all. */
  headers?: Record<string, string> | null;
  guards?: GuardInput[];
  defaultMode?: GuardMode;
  timeoutMs?: number;
  /** The tools listed from the upstream as changed (a new URL or headers), or as it is (refresh). */
  listing?: Listing;
  /** If-Match: the version the change is based on (412 when the server has moved past it). */
  ifMatch?: number;
}

type ServerChange =
  | { eventType: 'mcp_server.updated'; payload: PayloadOf<'mcp_server.updated'> }
  | {
      eventType: 'mcp_server.tools_changed';
      payload: PayloadOf<'mcp_server.tools_changed'>;
    };

/**
 * Changes what was given, and takes the tools of `listing`: `mcp_server.updated` with only what
 * changed, `mcp_server.tools_changed` when the tools differ. A change that changes nothing appends
 * nothing (a listing still records when it was made).
 */
async function changeServer(
  tx: Tx,
  actor: Actor,
  input: UpdateServerInput,
  secretKey: string,
): Promise<{ server: McpServerView; toolsChanged: boolean }> {
  const row = await lockedServer(tx, actor, input.id);
  if (input.ifMatch !== undefined && input.ifMatch !== row.version) {
    throw new AppError('precondition_failed', `The MCP server is at version ${row.version}, not ${input.ifMatch}: read it again.`, {
      version: row.version,
    });
  }
  if (input.listing && (input.listing.from.url !== row.url || input.listing.from.headersCipher !== row.headersCipher)) {
    throw new AppError('conflict', 'The MCP server’s URL or headers changed while its tools were being listed: send the request again.');
  }
  const changes: Partial<ServerRow> = {};
  const changed: Omit<PayloadOf<'mcp_server.updated'>, 'id'> = {};
  if (input.name !== undefined && input.name !== row.name) {
    await checkRoom(tx, actor.workspaceId, input.name, row.id);
    changes.name = changed.name = input.name;
  }
  if (input.url !== undefined && input.url !== row.url) {
    changes.url = input.url;
    changed.target = targetForEvents(input.url);
  }
  if (input.headers !== undefined && canonicalJson(input.headers ?? {}) !== canonicalJson(openHeaders(secretKey, row.headersCipher))) {
    Object.assign(changes, sealHeaders(secretKey, input.headers));
    changed.header_names = changes.headerNames!;
  }
  if (input.guards !== undefined) {
    const guards = await resolveGuards(tx, actor.workspaceId, input.guards);
    if (canonicalJson(guards) !== canonicalJson(row.guards)) changes.guards = changed.guards = guards;
  }
  if (input.defaultMode !== undefined && input.defaultMode !== row.defaultMode)
    changes.defaultMode = changed.default_mode = input.defaultMode;
  if (input.timeoutMs !== undefined && input.timeoutMs !== row.timeoutMs) changes.timeoutMs = changed.timeout_ms = input.timeoutMs;

  const events: ServerChange[] = [];
  if (Object.keys(changed).length > 0) events.push({ eventType: 'mcp_server.updated', payload: { id: row.id, ...changed } });
  const now = new Date();
  let toolsChanged = false;
  if (input.listing) {
    Object.assign(changes, { toolsListedAt: now, lastError: null });
    const diff = toolChanges(row.tools, input.listing.tools);
    if (diff.any) {
      toolsChanged = true;
      changes.tools = input.listing.tools;
      const { any: _any, ...names } = diff;
      events.push({
        eventType: 'mcp_server.tools_changed',
        payload: { id: row.id, name: changes.name ?? row.name, tools: digests(input.listing.tools), ...names },
      });
    }
  }
  if (events.length === 0) {
    if (Object.keys(changes).length === 0) return { server: serverView(row), toolsChanged };
    // Only when the tools were last listed (and that the listing worked): no change of the server.
    const [listed] = await tx.update(mcpServers).set(changes).where(eq(mcpServers.id, row.id)).returning();
    return { server: serverView(listed!), toolsChanged };
  }
  const appended = await appendEvents(
    tx,
    actor,
    events.map((e): NewEvent => ({ aggregateType: 'mcp_server', aggregateId: row.id, ...e })),
    now,
  );
  const [updated] = await tx
    .update(mcpServers)
    .set({ ...changes, updatedAt: now, version: appended.at(-1)!.aggregateVersion })
    .where(eq(mcpServers.id, row.id))
    .returning();
  return { server: serverView(updated!), toolsChanged };
}

/** Changes what was given (PATCH: a merge patch); see changeServer. */
export async function updateServer(tx: Tx, actor: Actor, input: UpdateServerInput, secretKey: string): Promise<McpServerView> {
  return (await changeServer(tx, actor, input, secretKey)).server;
}

/**
 * Takes the tools the upstream listed just now: `mcp_server.tools_changed` when they differ from
 * those kept (`changed: true`), nothing but the time of the listing when they do not.
 */
export async function replaceTools(
  tx: Tx,
  actor: Actor,
  input: { id: string; listing: Listing },
  secretKey: string,
): Promise<{ server: McpServerView; changed: boolean }> {
  const { server, toolsChanged } = await changeServer(tx, actor, input, secretKey);
  return { server, changed: toolsChanged };
}

/**
 * Records why listing the upstream failed, keeping the tools listed before; for a listing nobody
 * waits on (the upstream's own notification), whose failure would otherwise go unseen. Not a change
 * of the server: no event.
 */
export async function noteListingFailed(db: Executor, workspaceId: string, id: string, error: string): Promise<void> {
  await db
    .update(mcpServers)
    .set({ lastError: error })
    .where(and(eq(mcpServers.id, id), eq(mcpServers.workspaceId, workspaceId)));
}

/** Removes a server: its tools leave /mcp at once. */
export async function removeServer(tx: Tx, actor: Actor, id: string): Promise<{ id: string; name: string; removed: true }> {
  const row = await lockedServer(tx, actor, id);
  await appendEvents(tx, actor, [
    { aggregateType: 'mcp_server', aggregateId: row.id, eventType: 'mcp_server.removed', payload: { id: row.id, name: row.name } },
  ]);
  await tx.delete(mcpServers).where(eq(mcpServers.id, row.id));
  return { id: row.id, name: row.name, removed: true };
}

export async function getServer(db: Executor, workspaceId: string, id: string): Promise<McpServerView> {
  const [row] = await db
    .select()
    .from(mcpServers)
    .where(and(eq(mcpServers.id, id), eq(mcpServers.workspaceId, workspaceId)));
  if (!row) throw noSuchServer();
  return serverView(row);
}

/** The workspace's servers, newest first, after `after` (keyset paging, as every list). */
export async function listServers(
  db: Executor,
  workspaceId: string,
  q: { after?: CreatedKey; limit: number },
): Promise<(McpServerView & { key: CreatedKey })[]> {
  const rows = await db
    .select()
    .from(mcpServers)
    .where(and(eq(mcpServers.workspaceId, workspaceId), olderThan(mcpServers.createdAt, mcpServers.id, q.after)))
    .orderBy(desc(mcpServers.createdAt), desc(mcpServers.id))
    .limit(q.limit);
  return rows.map((r) => ({ ...serverView(r), key: { createdAt: r.createdAt, id: r.id } }));
}
