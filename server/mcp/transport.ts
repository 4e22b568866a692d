/**
 * MCP's Streamable HTTP transport for one session, on node's request and response: what a POST
 * may carry and how its answer goes back. server/mcp/http.ts authenticates, reads the body under
 * its limit and finds the session first; server/mcp/dispatch.ts answers the messages.
 *
 * - A POST carries one JSON-RPC message (batches left the protocol in 2025-06-18, and one message
 *   a POST keeps a key's rate limit counting each call). A request is answered with
 *   text/event-stream: every message related to it (its progress, an elicitation, its response)
 *   as `event: message`, and the stream ends with the response. A notification or a response
 *   alone is 202.
 * - There is no standalone GET stream (405, which the protocol allows): this server sends nothing
 *   outside a request.
 * - DELETE ends the session.
 *
 * Why not the SDK's StreamableHTTPServerTransport and Server: the transport converts each request
 * to a web Request and each answer to a web Response with a ReadableStream (through hono's node
 * adapter), and the Server keeps ~5 KB of handlers and maps per session and ~4 KB per call in
 * flight. A request_decision that waits holds all of that for as long as it waits, and with ten
 * thousand waiting at once (docs/performance.md) that was most of the instance's memory. A session
 * here is the few fields below; the SDK's own schemas check every message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC error outside any request (the protocol's shape for what the transport refuses). */
export function rpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** One session: whose it is, what its client can do, and its calls that wait. */
export class McpSession {
  /** When the client last sent a message, or a POST of it finished. */
  lastSeen = Date.now();
  /** POSTs not yet answered (a waiting request_decision among them): never idle while one is. */
  posting = 0;
  /** The client declared URL-mode elicitation at initialize: a wait offers it the decision page. */
  urlElicitation = false;
  /** The answers of waits under way, by JSON-RPC id: notifications/cancelled withdraws one. Made on the first. */
  waits: Map<RequestId, CallAnswer> | null = null;
  /** Ids of the requests this server sends the client (elicitations). */
  private sent = 0;
  private closed = false;
  onclose?: () => void;

  constructor(
    readonly id: string,
    readonly keyId: string,
  ) {}

  nextRequestId(): string {
    return `aws-${++this.sent}`;
  }

  /** Ends the session: every wait answers (the decision as it stands), and the id is forgotten. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const answer of this.waits?.values() ?? []) answer.stopWaiting();
    this.onclose?.();
  }
}

/** The answer of one request: an event stream on the POST's response, ended by the response. */
export class CallAnswer {
  /** How the call's wait ends, once it waits (request_decision). */
  private stop: (() => void) | null = null;
  /** The client cancelled the request: it gets no response (the protocol's rule); the stream just ends. */
  private withdrawn = false;

  constructor(private readonly res: ServerResponse) {}

  /** False once the client has gone or the response was sent. */
  get open(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  send(message: JSONRPCMessage): void {
    if (this.open) this.res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  /** A comment line, so proxies do not take a quiet wait for a dead one. */
  keepAlive(): void {
    if (this.open) this.res.write(': keepalive\n\n');
  }

  /** The request's response; the stream ends with it. */
  respond(message: JSONRPCMessage): void {
    if (!this.withdrawn) this.send(message);
    if (!this.res.writableEnded) this.res.end();
  }

  /**
   * The call waits: `stop` ends its wait when the client hangs up (now, if it already has), cancels
   * the request, or ends the session.
   */
  waiting(stop: () => void): void {
    this.stop = stop;
    if (this.res.destroyed && !this.res.writableFinished) return stop();
    this.res.on('close', () => {
      if (!this.res.writableFinished) stop();
    });
  }

  /** Ends the call's wait: it answers what it has. */
  stopWaiting(): void {
    this.stop?.();
  }

  /** notifications/cancelled: the wait ends and no response follows. */
  withdraw(): void {
    this.withdrawn = true;
    this.stop?.();
  }
}

/** What one POST carries, once the transport has checked it. */
export type Posted =
  | { kind: 'request'; message: JSONRPCMessage & { id: RequestId; method: string }; answer: CallAnswer }
  | { kind: 'other'; message: JSONRPCMessage };

/**
 * Checks one HTTP request of the session (`body`: the parsed JSON of a POST) as the transport
 * asks; answers it itself (DELETE, a refusal, 202) or returns the message for the server to answer.
 * `out`: the headers every answer carries (server/mcp/http.ts).
 */
export function receive(
  session: McpSession | null,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  out: Record<string, string>,
): Posted | null {
  const headers: Record<string, string> = session ? { ...out, 'Mcp-Session-Id': session.id } : out;
  if (req.method === 'DELETE' && session) {
    session.close();
    res.writeHead(200, headers).end();
    return null;
  }
  if (req.method !== 'POST') {
    rpcError(res, 405, -32000, 'Method not allowed: this server sends nothing outside a request (no GET stream).', {
      ...headers,
      Allow: 'POST, DELETE',
    });
    return null;
  }
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    rpcError(res, 406, -32000, 'Not acceptable: accept both application/json and text/event-stream.', headers);
    return null;
  }
  if (Array.isArray(body)) {
    rpcError(res, 400, -32600, 'Invalid request: send one JSON-RPC message a request (no batches).', headers);
    return null;
  }
  const parsed = JSONRPCMessageSchema.safeParse(body);
  if (!parsed.success) {
    rpcError(res, 400, -32700, 'Parse error: not a JSON-RPC message.', headers);
    return null;
  }
  const message = parsed.data;
  const version = req.headers['mcp-protocol-version'];
  const initializing = 'method' in message && message.method === 'initialize';
  if (!initializing && typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    rpcError(res, 400, -32000, `Bad request: unsupported protocol version ${version}.`, headers);
    return null;
  }
  if (!('method' in message) || !('id' in message)) {
    res.writeHead(202, headers).end();
    return { kind: 'other', message };
  }
  res.writeHead(200, {
    ...headers,
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache, no-transform',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  return { kind: 'request', message: message as JSONRPCMessage & { id: RequestId; method: string }, answer: new CallAnswer(res) };
}
