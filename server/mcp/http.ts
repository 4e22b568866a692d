/**
 * /mcp: the MCP Streamable HTTP endpoint on the app's port (scripts/serve.mjs routes it here).
 *
 * Every HTTP request presents an API key (`Authorization: Bearer`), resolved and counted against
 * the key's rate limit as a REST request is; an unknown or revoked key is 401, over the limit 429,
 * a body over the limit 413, all in the contract's error envelope. A browser page of another
 * origin is refused (403): the protocol asks servers to check Origin against DNS rebinding.
 *
 * This file is the door: it checks who asks, reads the body and finds the request's session
 * (server/mcp/sessions.ts keeps them: one key's, closed when idle, none from another key), then
 * hands the request to the transport (server/mcp/transport.ts: POST, DELETE; no GET stream) and
 * its message to the dispatch (server/mcp/dispatch.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { presentKey } from '@/server/api/api-key-auth';
import { errorBody, MAX_BODY_DEPTH, SECURITY_HEADERS } from '@/server/api/rest';
import { AppError } from '@/server/errors';
import { nodeHeaders } from '@/server/http/exchange';
import { readBody } from '@/server/http/node-api';
import { isAppOrigin } from '@/server/http/origin';
import { transportSecurityHeaders } from '@/server/http/transport-security';
import { describeError, log, logs } from '@/server/log';
import { countRequest } from '@/server/metrics';
import type { Runtime } from '@/server/runtime';
import { readStrictJson, utf8 } from '@/server/strict-json';
import type { Caller, RestHandle } from './call';
import { answerRequest, receiveMessage } from './dispatch';
import { McpSessions, type McpContext } from './sessions';
import { rpcError, receive } from './transport';
import { tools } from './tools';

const MCP_PATH = '/mcp';

/** True for a request target the MCP endpoint serves. */
export const isMcpPath = (url: string) => url === MCP_PATH || url.startsWith(`${MCP_PATH}?`) || url.startsWith(`${MCP_PATH}/`);

export interface McpHandlerOptions {
  runtime: () => Promise<Runtime>;
  /** The REST transport the tools run through (server/api/rest.ts). */
  handle: RestHandle;
}

export interface McpHandler {
  (req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Open sessions (the metrics, the tests). */
  readonly sessions: () => number;
  /** The service is stopping: waits answer the decision as it stands, then every session closes. */
  close(): Promise<void>;
}

/** The endpoint over one session table: each HTTP request of /mcp, from its key to its answer. */
class McpEndpoint {
  readonly sessions = new McpSessions();
  private context: McpContext | null = null;
  // Whatever the largest tool body may be (an artifact's content), and the JSON-RPC around it.
  private bodyLimit = 0;

  constructor(private readonly opts: McpHandlerOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    const started = performance.now();
    // The API's headers (data, never a page), and no caching.
    const out: Record<string, string> = { ...SECURITY_HEADERS, 'Cache-Control': 'no-store', 'X-Request-Id': requestId };
    res.on('close', () => {
      const seconds = (performance.now() - started) / 1000;
      countRequest(`${req.method} ${MCP_PATH}`, res.statusCode, seconds);
      const level = res.statusCode >= 500 ? 'warn' : 'info';
      if (logs(level))
        log(level, 'request', {
          requestId,
          operation: `${req.method} ${MCP_PATH}`,
          status: res.statusCode,
          ms: Math.round(seconds * 1000),
        });
    });
    try {
      await this.serve(req, res, out);
    } catch (err) {
      await this.refuse(req, res, out, requestId, err);
    }
  }

  /** `out`: the answer's headers so far, written with it (never set on `res` one by one: node would keep them for as long as a wait is open). */
  private async serve(req: IncomingMessage, res: ServerResponse, out: Record<string, string>): Promise<void> {
    const runtime = await this.opts.runtime();
    Object.assign(out, transportSecurityHeaders(runtime.env.APP_URL));
    const headers = nodeHeaders(req.headers);
    const origin = headers.get('origin');
    // A browser names the page that sent it; only the app's own (APP_URL's, never Host's) may.
    if (origin !== null && !isAppOrigin(origin, runtime.env.APP_URL)) {
      throw new AppError('forbidden', 'The MCP endpoint takes no requests from a page of another origin.');
    }
    const presented = await presentKey(runtime, headers.get('authorization'));
    if (presented) Object.assign(out, presented.headers);
    if (!presented) throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>.');
    if (!presented.key) throw new AppError('unauthorized', 'The API key is unknown or revoked.');
    const key = presented.key;

    let parsed: unknown;
    if (req.method === 'POST') {
      this.bodyLimit ||= Math.max(runtime.env.API_BODY_LIMIT_BYTES, ...[...tools().values()].map((t) => t.bodyLimitBytes ?? 0)) + 64 * 1024;
      const limit = this.bodyLimit;
      const bytes = await readBody(req, limit);
      if (!bytes) throw new AppError('payload_too_large', `The body is larger than ${limit} bytes.`, { limitBytes: limit });
      const text = utf8(bytes);
      if (text === null) return rpcError(res, 400, -32700, 'Parse error: the body is not UTF-8 JSON.', out);
      // The REST body's strict reading, before the SDK's schemas or any tool sees the message: its
      // arguments reach a REST body two levels down (params.arguments), so two levels more here.
      // Unchecked, 5,000 levels overflowed the stack of the schemas that walk it.
      // A string no store keeps is let through: the operation it reaches refuses it by its field.
      // A member named __proto__ is refused: the protocol's schemas copy the arguments into a new
      // object, where it would set the prototype and vanish instead of being refused by name.
      const read = readStrictJson(text, { maxDepth: MAX_BODY_DEPTH + 2, keepUnstorableText: true, refuseProtoKey: true });
      if (!read.ok) {
        const { problem } = read;
        const where = problem.kind === 'syntax' ? ` at byte ${problem.offset}` : problem.path ? ` (at ${problem.path})` : '';
        return rpcError(res, 400, -32700, `Parse error: ${problem.message}${where}.`, out);
      }
      parsed = read.value;
    }

    const sessionId = headers.get('mcp-session-id');
    let session = sessionId ? this.sessions.find(sessionId, key.keyId) : undefined;
    if (sessionId && !session) {
      return rpcError(res, 404, -32001, 'Session not found: start a new one with initialize.', out);
    }
    const initialize = req.method === 'POST' && isInitializeRequest(parsed);
    if (session && initialize) {
      return rpcError(res, 400, -32600, 'Invalid request: this session is initialized; start a new one without Mcp-Session-Id.', {
        ...out,
        'Mcp-Session-Id': session.id,
      });
    }
    const opened = !session;
    if (!session) {
      if (!initialize) return rpcError(res, 400, -32000, 'Bad request: send initialize first, then the Mcp-Session-Id it answers.', out);
      session = this.sessions.open(runtime.env, key.keyId);
    }
    const posted = receive(session, req, res, parsed, out);
    if (!posted) {
      // An initialize the transport refused (406) leaves no session behind.
      if (opened) session.close();
      return;
    }
    session.lastSeen = Date.now();
    if (posted.kind === 'other') return receiveMessage(session, posted.message);
    const seen = session;
    seen.posting++;
    res.on('close', () => {
      seen.posting--;
      seen.lastSeen = Date.now();
    });
    const sessions = this.sessions;
    this.context ??= {
      runtime,
      handle: this.opts.handle,
      stopping: sessions.stopping,
      waits: sessions.waits,
      calls: sessions.calls,
      answers: sessions.answers,
      servers: sessions.servers,
      upstreams: () => sessions.upstreams(runtime),
    };
    const caller: Caller = { presented, authorization: headers.get('authorization')! };
    // Not awaited (it answers every error itself): a call that waits holds its own frames, not
    // this request's as well.
    answerRequest(this.context, session, posted.message, posted.answer, caller).catch((err: unknown) => {
      log('error', 'mcp answer failed', { error: describeError(err) });
      res.destroy();
    });
  }

  /** The error `err` in the contract's envelope, or the connection ended when the answer has begun. */
  private async refuse(req: IncomingMessage, res: ServerResponse, out: Record<string, string>, requestId: string, err: unknown) {
    if (res.headersSent) {
      log('warn', 'mcp request failed after its answer began', { requestId, error: describeError(err) });
      res.destroy();
      return;
    }
    const error = err instanceof AppError ? err : null;
    if (!error) log('error', 'unexpected error', { requestId, error: describeError(err) });
    const shown = error ?? new AppError('internal_error', 'An unexpected error occurred.');
    const appUrl = await this.opts
      .runtime()
      .then((r) => r.env.APP_URL)
      .catch(() => 'http://localhost:3000');
    const body = JSON.stringify(errorBody(requestId, shown, appUrl));
    const extra: Record<string, string> = { ...shown.extras.headers };
    if (shown.retryAfter > 0) extra['Retry-After'] = String(shown.retryAfter);
    if (shown.status === 401) extra['WWW-Authenticate'] = 'Bearer realm="mcp"';
    // Answered before the body was read (401, 413): the connection closes rather than reading on.
    if (!req.complete) extra.Connection = 'close';
    res.writeHead(shown.status, {
      ...out,
      ...extra,
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(body)),
    });
    res.end(body);
  }
}

export function createMcpHandler(opts: McpHandlerOptions): McpHandler {
  const endpoint = new McpEndpoint(opts);
  const handler = ((req, res) => endpoint.handle(req, res)) as McpHandler;
  Object.defineProperty(handler, 'sessions', { value: () => endpoint.sessions.size });
  handler.close = () => endpoint.sessions.close();
  return handler;
}
