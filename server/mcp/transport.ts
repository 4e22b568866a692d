/**
 * The Streamable HTTP transport of one MCP session, on node's request and response (the SDK's
 * Transport interface; the SDK's Server speaks the protocol over it).
 *
 * Why not the SDK's StreamableHTTPServerTransport: it converts each request to a web Request and
 * each answer to a web Response with a ReadableStream (through hono's node adapter), and a call
 * that waits holds all of that for as long as it waits. With ten thousand waiting at once
 * (README, Performance) that was most of the instance's memory. This one writes each message of a
 * POST's answer straight into its node response as a server-sent event, which is all the protocol
 * asks of it:
 * - a POST of requests is answered with text/event-stream: every message related to those requests
 *   (their progress, an elicitation, their responses) as `event: message`, and the stream ends
 *   when the last response is written; a POST of notifications or responses alone is 202;
 * - there is no standalone GET stream (405, which the protocol allows): this server sends nothing
 *   outside a request;
 * - DELETE ends the session.
 * server/mcp/http.ts authenticates, reads the body under its limit and finds the session first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC error outside any request (the protocol's shape for what the transport refuses). */
export function rpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** The answer of one POST: its response, and the requests in it not yet answered. */
interface Answer {
  res: ServerResponse;
  pending: Set<RequestId>;
}

export class SessionTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly answers = new Map<RequestId, Answer>();
  private closed = false;

  constructor(readonly sessionId: string) {}

  async start(): Promise<void> {}

  /** Writes `message` into the answer of the request it belongs to (dropped when that answer is gone). */
  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const response = isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
    const id = response ? (message as { id: RequestId }).id : options?.relatedRequestId;
    if (id === undefined) return;
    const answer = this.answers.get(id);
    if (!answer) return;
    if (!answer.res.destroyed) answer.res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    if (!response) return;
    answer.pending.delete(id);
    this.answers.delete(id);
    if (answer.pending.size === 0 && !answer.res.destroyed) answer.res.end();
  }

  /** A comment line on the answer of `id`, so proxies do not take a quiet wait for a dead one. */
  keepAlive(id: RequestId): void {
    const answer = this.answers.get(id);
    if (answer && !answer.res.destroyed) answer.res.write(': keepalive\n\n');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const answer of new Set(this.answers.values())) if (!answer.res.destroyed) answer.res.end();
    this.answers.clear();
    this.onclose?.();
  }

  /** Serves one request of the session (`body`: the parsed JSON of a POST). */
  handle(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo: AuthInfo): void {
    const headers = { 'Mcp-Session-Id': this.sessionId };
    if (req.method === 'DELETE') {
      void this.close();
      res.writeHead(200, headers).end();
      return;
    }
    if (req.method !== 'POST') {
      return rpcError(res, 405, -32000, 'Method not allowed: this server sends nothing outside a request (no GET stream).', {
        ...headers,
        Allow: 'POST, DELETE',
      });
    }
    const accept = req.headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return rpcError(res, 406, -32000, 'Not acceptable: accept both application/json and text/event-stream.', headers);
    }
    // Batches left the protocol in 2025-06-18; one message a POST also keeps a key's rate limit
    // counting each call (server/mcp/http.ts counts the request).
    if (Array.isArray(body))
      return rpcError(res, 400, -32600, 'Invalid request: send one JSON-RPC message a request (no batches).', headers);
    const messages: JSONRPCMessage[] = [];
    for (const raw of [body]) {
      const parsed = JSONRPCMessageSchema.safeParse(raw);
      if (!parsed.success) return rpcError(res, 400, -32700, 'Parse error: not a JSON-RPC message.', headers);
      messages.push(parsed.data);
    }
    const initializing = messages.some((m) => isJSONRPCRequest(m) && m.method === 'initialize');
    const version = req.headers['mcp-protocol-version'];
    if (!initializing && typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return rpcError(res, 400, -32000, `Bad request: unsupported protocol version ${version}.`, headers);
    }
    const requests = messages.filter(isJSONRPCRequest);
    const requestInfo = { headers: req.headers as Record<string, string | string[] | undefined> };
    if (requests.length === 0) {
      res.writeHead(202, headers).end();
      for (const message of messages) this.onmessage?.(message, { authInfo, requestInfo });
      return;
    }
    res.writeHead(200, {
      ...headers,
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    const answer: Answer = { res, pending: new Set(requests.map((r) => r.id)) };
    for (const id of answer.pending) this.answers.set(id, answer);
    res.once('close', () => {
      for (const id of answer.pending) if (this.answers.get(id) === answer) this.answers.delete(id);
    });
    for (const message of messages) this.onmessage?.(message, { authInfo, requestInfo });
  }
}
