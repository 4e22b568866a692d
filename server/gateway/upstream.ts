/**
 * The service as an MCP client of the upstream servers a workspace fronts: listing their tools
 * (on registration, refresh, and when an upstream says they changed) and calling them for the
 * gateway (server/gateway/forward.ts). The SDK's Client speaks the protocol over its Streamable
 * HTTP transport; what reaches the network goes through `upstreamFetch` below, which is where the
 * service protects itself from the upstream:
 *
 * - the address connected to is checked at every connection (the webhook rule: public unicast
 *   only, unless the URL's host is one the operator allowed), so a name that resolves elsewhere
 *   after registration reaches nothing it should not;
 * - no answer is read past `UPSTREAM_ANSWER_LIMIT_BYTES`: an upstream that sends ten megabytes gets
 *   a clear error, not ten megabytes of the service's memory per call;
 * - every call has the server's timeout (the SDK cancels the request upstream when it passes).
 *
 * One connected Client per server (and per version of its settings) is kept by UpstreamPool: the
 * handshake is made once, not per call, and the calls of every agent share its connections.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { UpstreamTool } from '@/db/schema';
import { digestOf } from '@/server/ledger/canonical';
import { describeError, log } from '@/server/log';
import { checkedLookup } from '@/server/webhooks/url-policy';
import { hostAllowed } from './upstream-url';

/** The most an upstream's answer (one HTTP response to one request) may hold. */
const UPSTREAM_ANSWER_LIMIT_BYTES = 4 * 1024 * 1024;
/** Tools kept of one upstream, and the largest input schema kept (a tool past either is left out, and logged). */
const MAX_TOOLS = 500;
const MAX_SCHEMA_BYTES = 64 * 1024;
/** Pages of tools/list followed at most (a cursor that never ends is an upstream's mistake, not a loop of ours). */
const MAX_LIST_PAGES = 20;
/** The protocol's tool names (letters, digits, `_`, `-`, `.`; 1 to 128): others are left out. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** A connection no call has used for this long is closed (the next call connects again). */
const IDLE_CLOSE_MS = 5 * 60_000;

const CLIENT_INFO = { name: 'accountable-work-service-gateway', version: '1' };

/** Where an upstream is and what it is sent: its URL, the headers it asked for (decrypted), the time a call may take. */
export interface UpstreamTarget {
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

/** An upstream that could not be listed or called: `message` says why, as a person reads it (never a header's value). */
export class UpstreamError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'refused' | 'protocol' | 'timeout' | 'too_large',
    message: string,
  ) {
    super(message);
  }
}

/**
 * An answer body cut at `limit` bytes. An event stream (the answer to a request) ends with an error
 * response to that request, so the call fails at once with the reason; a stream that just broke
 * would be taken by the SDK's transport for a dropped connection, resumed, and the call left to
 * time out. Any other body errors.
 */
function limited(body: Readable, limit: number, url: URL, endWith: string | null): ReadableStream<Uint8Array> {
  let seen = 0;
  const web = Readable.toWeb(body) as ReadableStream<Uint8Array>;
  const message = `The MCP server at ${url.host} answered more than ${limit} bytes.`;
  return web.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen <= limit) return controller.enqueue(chunk);
        body.destroy();
        if (endWith === null) return controller.error(new UpstreamError('too_large', message));
        // Blank lines first: whatever event the cut left half-written ends there.
        controller.enqueue(Buffer.from(endWith.replace('%MESSAGE%', message), 'utf8'));
        controller.terminate();
      },
    }),
  );
}

/** The event that ends a cut event stream: an error response to the request `body` carried (none for a notification). */
function cutStreamEnd(body: string | undefined): string | null {
  if (body === undefined) return null;
  let id: unknown;
  try {
    id = (JSON.parse(body) as { id?: unknown }).id;
  } catch {
    return null;
  }
  if (typeof id !== 'string' && typeof id !== 'number') return null;
  const response = { jsonrpc: '2.0', id, error: { code: -32603, message: '%MESSAGE%' } };
  return `\n\nevent: message\ndata: ${JSON.stringify(response)}\n\n`;
}

/**
 * The fetch the SDK's transport is given: node's http over agents that check each connection's
 * address, answers read under the limit. Redirects are not followed here (the transport decides).
 */
export function upstreamFetch(allowHosts: readonly string[], limit = UPSTREAM_ANSWER_LIMIT_BYTES) {
  const open = { keepAlive: true, maxSockets: 64, allowPrivateIPAddress: true, allowMetaIPAddress: true };
  const checked = { keepAlive: true, maxSockets: 64, allowPrivateIPAddress: false, allowMetaIPAddress: false, lookup: checkedLookup() };
  const agents = {
    open: { http: new RequestFilteringHttpAgent(open), https: new RequestFilteringHttpsAgent(open) },
    checked: { http: new RequestFilteringHttpAgent(checked), https: new RequestFilteringHttpsAgent(checked) },
  };
  const fetchLike = (input: string | URL, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input);
    const secure = url.protocol === 'https:';
    const agent = (hostAllowed(url.hostname, allowHosts) ? agents.open : agents.checked)[secure ? 'https' : 'http'];
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const body = init.body === undefined || init.body === null ? undefined : String(init.body as string);
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise<Response>((resolve, reject) => {
      const signal = init.signal;
      if (signal?.aborted) return reject(signal.reason as Error);
      const request = (secure ? https : http).request(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
        const answer = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (Array.isArray(value)) for (const v of value) answer.append(name, v);
          else if (value !== undefined) answer.set(name, value);
        }
        const status = res.statusCode ?? 502;
        const empty = status === 204 || status === 304 || init.method === 'HEAD';
        if (empty) res.resume();
        const stream = (answer.get('content-type') ?? '').startsWith('text/event-stream');
        const endWith = stream ? cutStreamEnd(body) : null;
        resolve(new Response(empty ? null : limited(res, limit, url, endWith), { status, statusText: res.statusMessage, headers: answer }));
      });
      request.on('error', (err) => reject(connectionError(url, err)));
      // The transport hands every request the same signal (its own, for closing): a listener is
      // added per request and taken off when the request is done, not left on the signal.
      if (signal) {
        const abort = () => request.destroy(Object.assign(new Error('The operation was aborted.'), { name: 'AbortError' }));
        signal.addEventListener('abort', abort, { once: true });
        request.on('close', () => signal.removeEventListener('abort', abort));
      }
      request.end(body);
    });
  };
  return Object.assign(fetchLike, {
    close() {
      for (const set of Object.values(agents)) for (const agent of Object.values(set)) agent.destroy();
    },
  });
}

/** What a failed connection is called, as the owner reads it. */
function connectionError(url: URL, err: unknown): Error {
  if (err instanceof Error && err.name === 'AbortError') return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EREFUSEDADDRESS' || /is not allowed|private|meta/i.test(String((err as Error).message))) {
    return new UpstreamError('refused', `The MCP server at ${url.host} resolves to an address upstreams may not reach.`);
  }
  return new UpstreamError('unreachable', `The MCP server at ${url.host} could not be reached (${code ?? describeErrorShort(err)}).`);
}

const describeErrorShort = (err: unknown) => (err instanceof Error ? err.message.slice(0, 200) : 'unknown error');

/** Any error of a request to an upstream as an UpstreamError. */
function asUpstreamError(url: string, err: unknown, timeoutMs: number): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof UpstreamError) return cause;
  const host = new URL(url).host;
  const message = err instanceof Error ? err.message : String(err);
  if (/timed out|timeout/i.test(message))
    return new UpstreamError('timeout', `The MCP server at ${host} did not answer within ${timeoutMs} ms.`);
  if (err instanceof StreamableHTTPError) {
    return new UpstreamError('refused', `The MCP server at ${host} answered HTTP ${err.code ?? 'error'}.`);
  }
  const limit = /more than \d+ bytes/.exec(message);
  if (limit) return new UpstreamError('too_large', `The MCP server at ${host} answered ${limit[0]}.`);
  return new UpstreamError('protocol', `The MCP server at ${host} did not answer as an MCP server: ${message.slice(0, 300)}`);
}

/** A Client connected to `target`, its answers read through `fetchLike`. */
async function connect(target: UpstreamTarget, fetchLike: ReturnType<typeof upstreamFetch>, onToolsChanged?: () => void): Promise<Client> {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  if (onToolsChanged) client.setNotificationHandler(ToolListChangedNotificationSchema, () => onToolsChanged());
  const transport = new StreamableHTTPClientTransport(new URL(target.url), {
    fetch: fetchLike,
    requestInit: { headers: target.headers },
    // A stream the upstream drops is not chased for long: the next call connects again.
    reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 30_000, reconnectionDelayGrowFactor: 2, maxRetries: 3 },
  });
  try {
    await client.connect(transport, { timeout: target.timeoutMs });
  } catch (err) {
    await client.close().catch(() => undefined);
    throw asUpstreamError(target.url, err, target.timeoutMs);
  }
  return client;
}

/** An upstream tool as the service keeps it; null for one it leaves out (a name or schema it cannot take). */
function keptTool(tool: Tool, host: string): UpstreamTool | null {
  const schema = tool.inputSchema as Record<string, unknown>;
  const leave = (why: string) => {
    log('warn', 'mcp upstream tool left out', { host, tool: tool.name.slice(0, 200), why });
    return null;
  };
  if (!TOOL_NAME.test(tool.name)) return leave('its name is not a protocol tool name');
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) return leave(`its input schema is over ${MAX_SCHEMA_BYTES} bytes`);
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    ...(tool.description !== undefined && { description: tool.description }),
    input_schema: schema,
    schema_digest: digestOf(schema),
    ...(tool.annotations !== undefined && { annotations: tool.annotations as Record<string, unknown> }),
  };
}

/** Every tool of the upstream `client` is connected to, in its order. */
async function listAll(client: Client, target: UpstreamTarget): Promise<UpstreamTool[]> {
  const host = new URL(target.url).host;
  const kept: UpstreamTool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    let listed;
    try {
      listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: target.timeoutMs });
    } catch (err) {
      throw asUpstreamError(target.url, err, target.timeoutMs);
    }
    for (const tool of listed.tools) {
      if (seen.has(tool.name)) continue;
      seen.add(tool.name);
      const one = keptTool(tool, host);
      if (one && kept.length < MAX_TOOLS) kept.push(one);
    }
    cursor = listed.nextCursor;
    if (!cursor) break;
  }
  return kept;
}

/**
 * The tools of the upstream at `target`, listed on a connection of their own (registration and
 * refresh: nothing of it is kept). Throws UpstreamError when it cannot be reached or listed.
 */
export async function listUpstreamTools(target: UpstreamTarget, allowHosts: readonly string[]): Promise<UpstreamTool[]> {
  const fetchLike = upstreamFetch(allowHosts);
  let client: Client | null = null;
  try {
    client = await connect(target, fetchLike);
    return await listAll(client, target);
  } finally {
    if (client) await endSession(client);
    fetchLike.close();
  }
}

/** Ends the client's session politely (DELETE), then its transport. */
async function endSession(client: Client): Promise<void> {
  const transport = client.transport as StreamableHTTPClientTransport | undefined;
  await transport?.terminateSession().catch(() => undefined);
  await client.close().catch(() => undefined);
}

/** Which connection a server's calls share: its id and the version of its settings (a change connects anew). */
export interface UpstreamKey {
  workspaceId: string;
  serverId: string;
  version: number;
}

interface Connection {
  version: number;
  client: Promise<Client>;
  lastUsed: number;
}

/**
 * The upstream connections of this process, one per registered server in use. A call that finds
 * the connection's session gone (the upstream restarted: 404) connects again once and is sent
 * again: a 404 for the session means the upstream never ran it.
 */
export class UpstreamPool {
  private readonly connections = new Map<string, Connection>();
  private readonly fetchLike: ReturnType<typeof upstreamFetch>;
  private sweep: NodeJS.Timeout | null = null;

  constructor(
    allowHosts: readonly string[],
    /** Called when an upstream says its tools changed (notifications/tools/list_changed). */
    private readonly onToolsChanged: (key: UpstreamKey) => void = () => undefined,
  ) {
    this.fetchLike = upstreamFetch(allowHosts);
  }

  /** Calls `tool` with `args` on the upstream; the tool's result, or UpstreamError. */
  async call(
    key: UpstreamKey,
    target: UpstreamTarget,
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<CallToolResult> {
    for (let attempt = 0; ; attempt++) {
      const connection = this.connection(key, target);
      let client: Client;
      try {
        client = await connection.client;
      } catch (err) {
        throw asUpstreamError(target.url, err, target.timeoutMs);
      }
      try {
        return (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: target.timeoutMs, signal })) as CallToolResult;
      } catch (err) {
        const aborted = err instanceof Error && err.name === 'AbortError';
        // A connection that failed is not kept: the next call connects anew.
        if (!aborted) this.release(key.serverId, connection);
        if (err instanceof StreamableHTTPError && err.code === 404 && attempt === 0) continue;
        throw asUpstreamError(target.url, err, target.timeoutMs);
      }
    }
  }

  private connection(key: UpstreamKey, target: UpstreamTarget): Connection {
    const held = this.connections.get(key.serverId);
    if (held && held.version === key.version) {
      held.lastUsed = Date.now();
      return held;
    }
    if (held) this.release(key.serverId, held);
    const client = connect(target, this.fetchLike, () => this.onToolsChanged(key));
    const connection: Connection = { version: key.version, client, lastUsed: Date.now() };
    this.connections.set(key.serverId, connection);
    // A connection that could not be made is forgotten at once: the next call tries again.
    client.catch(() => {
      if (this.connections.get(key.serverId) === connection) this.connections.delete(key.serverId);
    });
    this.startSweep();
    return connection;
  }

  private release(serverId: string, connection: Connection): void {
    if (this.connections.get(serverId) === connection) this.connections.delete(serverId);
    connection.client
      .then(endSession, () => undefined)
      .catch((err: unknown) => log('warn', 'mcp upstream close failed', { error: describeError(err) }));
  }

  private startSweep(): void {
    if (this.sweep) return;
    this.sweep = setInterval(() => {
      const idle = Date.now() - IDLE_CLOSE_MS;
      for (const [id, connection] of this.connections) if (connection.lastUsed < idle) this.release(id, connection);
    }, IDLE_CLOSE_MS / 5);
    this.sweep.unref();
  }

  /** Connections held (the tests, the metrics). */
  get size(): number {
    return this.connections.size;
  }

  async close(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    const held = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(held.map((c) => c.client.then(endSession, () => undefined)));
    this.fetchLike.close();
  }
}
