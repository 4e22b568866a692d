/**
 * /mcp: the MCP Streamable HTTP endpoint on the app's port (scripts/serve.mjs routes it here).
 *
 * Every HTTP request presents an API key (`Authorization: Bearer`), resolved and counted against
 * the key's rate limit as a REST request is; an unknown or revoked key is 401, over the limit 429,
 * a body over the limit 413, all in the contract's error envelope. A browser page of another
 * origin is refused (403): the protocol asks servers to check Origin against DNS rebinding.
 *
 * Sessions (Mcp-Session-Id) live in this process (server/mcp/transport.ts's McpSession, a few
 * fields), each bound to the key that opened it. Another key presenting the id gets 404, as
 * an unknown id does, and a client that gets 404 starts a new session (the protocol's rule): after
 * a restart, or on another instance, nothing is lost but the handshake. A session whose client has
 * sent nothing for MCP_SESSION_IDLE_MS (default 30 minutes), and that has no call in flight, is
 * closed (a standalone GET stream, which only listens, does not keep it).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { presentKey } from '@/server/api/api-key-auth';
import { errorBody, SECURITY_HEADERS } from '@/server/api/rest';
import { admitWaiter } from '@/server/capacity';
import { AppError } from '@/server/errors';
import { nodeHeaders } from '@/server/http/exchange';
import { readBody } from '@/server/http/node-api';
import { addressedOrigin } from '@/server/http/origin';
import { describeError, log, logs } from '@/server/log';
import { countRefusal, countRequest } from '@/server/metrics';
import type { Runtime } from '@/server/runtime';
import { utf8 } from '@/server/strict-json';
import type { Caller, RestHandle } from './call';
import { answerRequest, receiveMessage, type McpContext } from './server';
import { rpcError, receive, McpSession } from './transport';
import { tools } from './tools';
import type { DecisionWatch } from './wait';

const MCP_PATH = '/mcp';

/** True for a request target the MCP endpoint serves. */
export const isMcpPath = (url: string) => url === MCP_PATH || url.startsWith(`${MCP_PATH}?`) || url.startsWith(`${MCP_PATH}/`);

const SWEEP_MS = 60_000;

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

export function createMcpHandler(opts: McpHandlerOptions): McpHandler {
  const sessions = new Map<string, McpSession>();
  let stopping = false;
  const waits = new Set<DecisionWatch>();
  const calls = { running: 0 };
  let context: McpContext | null = null;
  // Whatever the largest tool body may be (an artifact's content), and the JSON-RPC around it.
  let bodyLimit = 0;

  // Started with the first session, so a handler never used costs no timer.
  let sweep: NodeJS.Timeout | null = null;
  const startSweep = (runtime: Runtime) => {
    sweep ??= setInterval(
      () => {
        const idle = Date.now() - runtime.env.MCP_SESSION_IDLE_MS;
        for (const session of sessions.values()) if (session.posting === 0 && session.lastSeen < idle) session.close();
      },
      Math.min(SWEEP_MS, runtime.env.MCP_SESSION_IDLE_MS),
    );
    sweep.unref();
  };

  /** A session for `keyId`'s initialize: admitted while memory and the key's share allow. */
  function open(runtime: Runtime, keyId: string): McpSession {
    admitWaiter(runtime.env.WAITERS_HEAP_PERCENT);
    let held = 0;
    for (const s of sessions.values()) if (s.keyId === keyId) held++;
    if (held >= runtime.env.MCP_SESSIONS_PER_KEY) {
      countRefusal('mcp_sessions');
      throw new AppError(
        'rate_limited',
        `This key already holds ${held} MCP sessions on this instance; end one (DELETE /mcp) or let one go idle.`,
        { limit: runtime.env.MCP_SESSIONS_PER_KEY, scope: 'mcp_sessions' },
        { retryAfter: 60 },
      );
    }
    startSweep(runtime);
    const session = new McpSession(randomUUID(), keyId);
    sessions.set(session.id, session);
    session.onclose = () => void sessions.delete(session.id);
    return session;
  }

  /** `out`: the answer's headers so far, written with it (never set on `res` one by one: node would keep them for as long as a wait is open). */
  async function serve(req: IncomingMessage, res: ServerResponse, out: Record<string, string>): Promise<void> {
    const runtime = await opts.runtime();
    const headers = nodeHeaders(req.headers);
    const origin = headers.get('origin');
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    if (origin && origin !== addressedOrigin(headers, url, runtime.env.TRUSTED_PROXY_HOPS)) {
      throw new AppError('forbidden', 'The MCP endpoint takes no requests from a page of another origin.');
    }
    const presented = await presentKey(runtime, headers.get('authorization'));
    if (presented) Object.assign(out, presented.headers);
    if (!presented) throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>.');
    if (!presented.key) throw new AppError('unauthorized', 'The API key is unknown or revoked.');
    const key = presented.key;

    let parsed: unknown;
    if (req.method === 'POST') {
      bodyLimit ||= Math.max(runtime.env.API_BODY_LIMIT_BYTES, ...[...tools().values()].map((t) => t.bodyLimitBytes ?? 0)) + 64 * 1024;
      const bytes = await readBody(req, bodyLimit);
      if (!bytes) throw new AppError('payload_too_large', `The body is larger than ${bodyLimit} bytes.`, { limitBytes: bodyLimit });
      const text = utf8(bytes);
      try {
        if (text === null) throw new Error('not UTF-8');
        parsed = JSON.parse(text);
      } catch {
        return rpcError(res, 400, -32700, 'Parse error: the body is not UTF-8 JSON.', out);
      }
    }

    const sessionId = headers.get('mcp-session-id');
    let session = sessionId ? sessions.get(sessionId) : undefined;
    if (sessionId && (!session || session.keyId !== key.keyId)) {
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
      session = open(runtime, key.keyId);
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
    context ??= { runtime, handle: opts.handle, stopping: () => stopping, waits, calls };
    const caller: Caller = { presented, authorization: headers.get('authorization')! };
    // Not awaited (it answers every error itself): a call that waits holds its own frames, not
    // this request's as well.
    answerRequest(context, session, posted.message, posted.answer, caller).catch((err: unknown) => {
      log('error', 'mcp answer failed', { error: describeError(err) });
      res.destroy();
    });
  }

  const handler = async function handleMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
      await serve(req, res, out);
    } catch (err) {
      if (res.headersSent) {
        log('warn', 'mcp request failed after its answer began', { requestId, error: describeError(err) });
        res.destroy();
        return;
      }
      const error = err instanceof AppError ? err : null;
      if (!error) log('error', 'unexpected error', { requestId, error: describeError(err) });
      const shown = error ?? new AppError('internal_error', 'An unexpected error occurred.');
      const appUrl = await opts
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
  } as McpHandler;
  Object.defineProperty(handler, 'sessions', { value: () => sessions.size });
  handler.close = async () => {
    stopping = true;
    if (sweep) clearInterval(sweep);
    // Waits answer at once (the decision as it stands): their answers go out before the sessions
    // close, within the drain the launcher allows.
    for (const watch of waits) watch.cancel();
    const until = Date.now() + 5_000;
    while (calls.running > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    for (const session of [...sessions.values()]) session.close();
  };
  return handler;
}
