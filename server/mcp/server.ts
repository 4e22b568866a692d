/**
 * The MCP server: answers each JSON-RPC request of a session (server/mcp/transport.ts) — the
 * handshake, the tools (server/mcp/tools.ts, each a REST operation run through the REST transport
 * by server/mcp/call.ts), request_decision's wait for the ruling, and the two resources. The
 * SDK's schemas check every request; what a session keeps is server/mcp/transport.ts's McpSession.
 * The caller's key comes with each request (resolved and counted by server/mcp/http.ts), so a key
 * revoked mid-session is refused at its next request.
 */
import { randomUUID } from 'node:crypto';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  InitializeRequestSchema,
  LATEST_PROTOCOL_VERSION,
  ReadResourceRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { admitWaiter } from '@/server/capacity';
import { AppError } from '@/server/errors';
import { hubOf } from '@/server/ledger/feed';
import { describeError, log } from '@/server/log';
import type { Runtime } from '@/server/runtime';
import { callTool, refusal, type Caller, type RestHandle, type ToolAnswer } from './call';
import { resourceReaders, tools, WAIT_SECONDS_MAX, type Tool } from './tools';
import type { CallAnswer, McpSession } from './transport';
import { DecisionWatch, type WaitSignal } from './wait';

/** How often a waiting request_decision reports progress when nothing happens (keeps proxies and client timeouts alive). */
const PROGRESS_EVERY_MS = 10_000;

export interface McpContext {
  runtime: Runtime;
  handle: RestHandle;
  /** True once the service is stopping: a wait that begins answers at once. */
  stopping(): boolean;
  /** Waits under way in this process: stopping ends each (it answers the decision as it stands). */
  waits: Set<DecisionWatch>;
  /** Requests under way in this process (stopping lets them answer before the database closes). */
  calls: { running: number };
}

/** A JSON-RPC error for the request's response. */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

const SERVER_INFO = { name: 'accountable-work-service', title: 'Accountable Work Service', version: '1' };

const INSTRUCTIONS =
  'The Accountable Work Service: the system of record for agent work. Create work and claim it, keep the run alive ' +
  'with heartbeat or checkpoint, and finish it with what you delivered. Before an action that needs a human’s ' +
  'approval, call request_decision with wait_seconds and do not act until its status is approved; then present the ' +
  'grant with consume_grant. Every change is recorded in a hash-chained ledger (read_events, verify_ledger). Errors ' +
  'come back as the REST API’s: {error: {code, message, details, requestId}}.';

/** A tool's answer as MCP's result: the body as structured content and as text, the error flagged, the HTTP facts in _meta. */
function resultOf(answer: ToolAnswer, extra?: Record<string, unknown>): CallToolResult {
  const body = extra && answer.body && typeof answer.body === 'object' ? { ...answer.body, ...extra } : answer.body;
  const structured = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : { value: body };
  const meta: Record<string, unknown> = { 'aws/status': answer.status };
  if (answer.headers['X-Request-Id']) meta['aws/requestId'] = answer.headers['X-Request-Id'];
  return {
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
    isError: answer.status >= 400,
    _meta: meta,
  };
}

function listed(tool: Tool) {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: tool.inputSchema,
    annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: false, openWorldHint: false },
  };
}

const RESOURCES = [
  {
    uri: 'ledger://checkpoint',
    name: 'checkpoint',
    title: 'The ledger’s latest signed checkpoint',
    description: 'The workspace ledger’s newest signed checkpoint (C2SP signed note over its Merkle tree head), as GET /ledger/checkpoint.',
    mimeType: 'application/json',
  },
];

const RESOURCE_TEMPLATES = [
  {
    uriTemplate: 'decision://{id}',
    name: 'decision',
    title: 'A decision',
    description: 'A decision as it stands, as GET /decisions/{id}: status, ruling, chosen option, edited arguments, grant.',
    mimeType: 'application/json',
  },
];

type Request = { id: RequestId; method: string; params?: Record<string, unknown> };

/** Checks `message` against the SDK's schema for its method; the parsed request, or -32602. */
function parsed<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { message: string } } },
  message: unknown,
): T {
  const result = schema.safeParse(message);
  if (!result.success) throw new RpcError(ErrorCode.InvalidParams, `Invalid params: ${result.error.message}`);
  return result.data;
}

async function resultOfRequest(
  ctx: McpContext,
  session: McpSession,
  request: Request,
  answer: CallAnswer,
  caller: Caller,
): Promise<unknown> {
  const appUrl = ctx.runtime.env.APP_URL;
  switch (request.method) {
    case 'initialize': {
      const { params } = parsed(InitializeRequestSchema, request);
      session.urlElicitation = Boolean(params.capabilities.elicitation?.url);
      return {
        protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(params.protocolVersion) ? params.protocolVersion : LATEST_PROTOCOL_VERSION,
        capabilities: { tools: {}, resources: {} },
        serverInfo: SERVER_INFO,
        instructions: INSTRUCTIONS,
      };
    }
    case 'ping':
      return {};
    case 'tools/list':
      return { tools: [...tools().values()].map(listed) };
    case 'tools/call': {
      const { params } = parsed(CallToolRequestSchema, request);
      const tool = tools().get(params.name);
      if (!tool) throw new RpcError(ErrorCode.InvalidParams, `No tool named ${params.name}.`);
      const args = params.arguments ?? {};
      // Handed on, not awaited: a wait holds its own frame only, not this one's as well.
      if (tool.name === 'request_decision') {
        return requestDecision(ctx, session, tool, args, caller, { id: request.id, progressToken: params._meta?.progressToken, answer });
      }
      return resultOf(await callTool(ctx.handle, tool, args, caller, appUrl));
    }
    case 'resources/list':
      return { resources: RESOURCES };
    case 'resources/templates/list':
      return { resourceTemplates: RESOURCE_TEMPLATES };
    case 'resources/read': {
      const { uri } = parsed(ReadResourceRequestSchema, request).params;
      const readers = resourceReaders();
      const decision = /^decision:\/\/([^/?#]+)$/.exec(uri);
      let read: ToolAnswer;
      if (uri === 'ledger://checkpoint') read = await callTool(ctx.handle, readers.checkpoint, {}, caller, appUrl);
      else if (decision) read = await callTool(ctx.handle, readers.decision, { id: decision[1] }, caller, appUrl);
      else throw new RpcError(-32002, `No resource ${uri}: read ledger://checkpoint or decision://{id}.`);
      if (read.status === 404) throw new RpcError(-32002, `Resource not found: ${uri}.`, read.body);
      if (read.status >= 400) throw new RpcError(ErrorCode.InvalidRequest, `Reading ${uri} failed (${read.status}).`, read.body);
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(read.body) }] };
    }
    default:
      throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${request.method}.`);
  }
}

/**
 * Answers one request of `session` on its event stream, ending the stream with the response. Not
 * an async function: a request_decision that waits keeps no frame of this one (nor the request)
 * for as long as it waits, only the id and method its response needs.
 */
export function answerRequest(ctx: McpContext, session: McpSession, request: Request, answer: CallAnswer, caller: Caller): Promise<void> {
  const { id, method } = request;
  ctx.calls.running++;
  return resultOfRequest(ctx, session, request, answer, caller).then(
    (result) => {
      ctx.calls.running--;
      answer.respond({ jsonrpc: '2.0', id, result: result as Record<string, unknown> });
    },
    (err: unknown) => {
      ctx.calls.running--;
      if (!(err instanceof RpcError)) log('error', 'mcp request failed', { method, error: describeError(err) });
      const error = err instanceof RpcError ? err : new RpcError(ErrorCode.InternalError, 'Internal error.');
      answer.respond({
        jsonrpc: '2.0',
        id,
        error: { code: error.code, message: error.message, ...(error.data !== undefined && { data: error.data }) },
      });
    },
  );
}

/**
 * A notification or a response of `session`: notifications/cancelled ends the wait it names. The
 * client's answers to elicitations change nothing here (the ruling happens on the decision page).
 */
export function receiveMessage(session: McpSession, message: JSONRPCMessage): void {
  if (!('method' in message) || message.method !== 'notifications/cancelled') return;
  const cancelled = CancelledNotificationSchema.safeParse(message);
  if (!cancelled.success || cancelled.data.params.requestId === undefined) return;
  session.waits?.get(cancelled.data.params.requestId)?.withdraw();
}

/** What a wait ended with, beside the decision. */
type WaitEnd = 'not_waited' | 'ruled' | 'wait_elapsed' | 'cancelled' | 'service_stopping';

/** The request a wait answers: its id, the client's progress token, and its event stream. */
interface WaitCall {
  id: RequestId;
  progressToken: string | number | undefined;
  answer: CallAnswer;
}

/**
 * request_decision: raises the decision (POST /decisions), then, with wait_seconds, waits on the
 * workspace's feed until the decision's ledger moves to a ruling or the wait ends, reporting
 * progress and offering the decision page's URL to a client that can open one. It answers the
 * decision as GET /decisions/{id} then gives it, with `wait: {ended, waited_ms}`.
 *
 * While it waits it holds a DecisionWait (below), its watch (its place on the feed), a timer and
 * the call's stream: the decision's answer is read again when the wait ends, not kept (a decision
 * is kilobytes, and ten thousand may wait at once).
 */
async function requestDecision(
  ctx: McpContext,
  session: McpSession,
  tool: Tool,
  args: Record<string, unknown>,
  caller: Caller,
  call: WaitCall,
): Promise<CallToolResult> {
  const appUrl = ctx.runtime.env.APP_URL;
  const waitSeconds = args.wait_seconds ?? 0;
  if (typeof waitSeconds !== 'number' || !Number.isInteger(waitSeconds) || waitSeconds < 0 || waitSeconds > WAIT_SECONDS_MAX) {
    const message = `An integer from 0 to ${WAIT_SECONDS_MAX}.`;
    return resultOf(
      refusal(new AppError('validation_failed', `wait_seconds: ${message}`, { issues: [{ path: 'wait_seconds', message }] }), appUrl),
    );
  }
  const key = caller.presented.key!;
  const started = Date.now();
  const deadline = started + waitSeconds * 1000;
  // A wait holds a connection like an event-stream lease, and counts among the key's leases: admitted
  // before the decision is raised, so a refused wait raises nothing.
  const hub = hubOf(ctx.runtime);
  if (waitSeconds > 0) {
    try {
      admitWaiter(ctx.runtime.env.WAITERS_HEAP_PERCENT);
    } catch (err) {
      if (err instanceof AppError) return resultOf(refusal(err, appUrl));
      throw err;
    }
  }
  const place = waitSeconds > 0 ? hub.admit(key.keyId, deadline, ctx.runtime.env.SSE_LEASES_PER_KEY) : { release() {} };
  if ('retryAfterMs' in place) {
    const retryAfter = Math.max(1, Math.ceil(place.retryAfterMs / 1000));
    const limit = ctx.runtime.env.SSE_LEASES_PER_KEY;
    return resultOf(
      refusal(
        new AppError(
          'rate_limited',
          `This key already holds ${limit} open waits and event-stream leases on this instance; wait for one to end or pass wait_seconds 0.`,
          { limit, scope: 'event_stream_leases' },
          { retryAfter },
        ),
        appUrl,
      ),
    );
  }
  // The client that hangs up, cancels the call (notifications/cancelled) or ends the session ends
  // the wait, as stopping does; heard from the start, also while the decision is being raised.
  let watch: DecisionWatch | null = null;
  let cancelled = false;
  const cancel = () => {
    cancelled = true;
    watch?.cancel();
  };
  if (waitSeconds > 0) {
    (session.waits ??= new Map()).set(call.id, call.answer);
    call.answer.waiting(cancel);
  }
  const release = () => {
    if (watch) {
      watch.stop();
      ctx.waits.delete(watch);
    }
    session.waits?.delete(call.id);
    place.release();
  };
  let waiting = false;
  try {
    const raised = await raise(ctx, tool, args, caller, waitSeconds);
    if ('result' in raised) return raised.result;
    const { id, title } = raised;

    // Joined before the decision is read again: a ruling that commits after this read reaches the watch.
    watch = new DecisionWatch(hub, key.keyId, key.workspaceId, id);
    ctx.waits.add(watch);
    if (cancelled || ctx.stopping()) watch.cancel();
    await watch.start();
    const wait = new DecisionWait(ctx, session, call, caller, id, watch, started, deadline, waitSeconds, release);
    const seen = await wait.glance();
    wait.offered = offerPage(session, call, pageOf(ctx, id), title);
    // Handed on, not awaited: while the wait lasts, its state is the DecisionWait's fields, and
    // this frame is gone. It releases what it holds when it settles.
    waiting = true;
    return wait.run(seen);
  } finally {
    if (!waiting) release();
  }
}

/**
 * A request_decision from the decision's first read to its answer: it reports progress every
 * PROGRESS_EVERY_MS, and reads the decision again each time its ledger moves, until it is ruled or
 * the wait ends. While it waits it is held by its watch (the feed, a timer) and the call's stream,
 * with no async frame: what it needs is these fields.
 */
class DecisionWait {
  /** The decision page offered to the client (URL-mode elicitation), to withdraw or complete at the end. */
  offered: { elicitationId: string; requestId: string } | null = null;
  private seen: Glance = { final: null, approvals: 0, required: undefined };
  /** Seconds waited in the last progress notification: strictly increasing (the protocol asks it). */
  private lastProgress = -1;
  private resolve: (result: CallToolResult) => void = () => undefined;
  private reject: (err: unknown) => void = () => undefined;

  constructor(
    private readonly ctx: McpContext,
    private readonly session: McpSession,
    private readonly call: WaitCall,
    private readonly caller: Caller,
    private readonly id: string,
    private readonly watch: DecisionWatch,
    private readonly started: number,
    private readonly deadline: number,
    private readonly waitSeconds: number,
    private readonly release: () => void,
  ) {}

  /** Reads the decision as GET /decisions/{id} answers it. */
  read(): Promise<ToolAnswer> {
    return callTool(this.ctx.handle, resourceReaders().decision, { id: this.id }, this.caller, this.ctx.runtime.env.APP_URL);
  }

  /** A read of the decision, kept whole only when it ends the wait (ruled, or an error). */
  async glance(): Promise<Glance> {
    const answer = await this.read();
    const decision = (answer.body as { decision?: { status?: string; approvals?: unknown[]; policy?: { approvals_required?: number } } })
      .decision;
    if (answer.status >= 400 || decision?.status !== 'pending') return { final: answer, approvals: 0, required: undefined };
    return { final: null, approvals: decision.approvals?.length ?? 0, required: decision.policy?.approvals_required };
  }

  /** Waits from `seen`, the decision's first read; settles with the tool's result. */
  run(seen: Glance): Promise<CallToolResult> {
    return new Promise<CallToolResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.step(seen);
    });
  }

  private step(seen: Glance): void {
    this.seen = seen;
    if (seen.final) {
      if (seen.final.status >= 400) return this.settle(resultOf(seen.final));
      return this.end('ruled');
    }
    const left = this.deadline - Date.now();
    if (left <= 0) return this.end('wait_elapsed');
    this.progress();
    // A client that asked for no progress still hears from a wait this often: proxies close quiet connections.
    this.call.answer.keepAlive();
    this.watch.next(Math.min(left, PROGRESS_EVERY_MS), this.woken);
  }

  private readonly woken = (why: WaitSignal): void => {
    try {
      this.wake(why);
    } catch (err) {
      this.fail(err);
    }
  };

  private wake(why: WaitSignal): void {
    if (why === 'moved') this.glance().then((seen) => this.step(seen), this.fail);
    else if (why === 'timeout') this.step(this.seen);
    else if (why === 'cancelled') this.end(this.ctx.stopping() ? 'service_stopping' : 'cancelled');
    else if (why === 'access_ended') {
      this.settle(resultOf(refusal(new AppError('unauthorized', 'The API key was revoked while waiting.'), this.ctx.runtime.env.APP_URL)));
    }
    // The feed could not read: the decision as it stands, from a read of its own.
    else this.end('wait_elapsed');
  }

  /** Sends a progress notification when the client asked for them (a progressToken). */
  private progress(): void {
    const token = this.call.progressToken;
    if (token === undefined) return;
    const { approvals, required } = this.seen;
    const count = required && required > 1 ? ` (${approvals} of ${required} approvals)` : '';
    this.lastProgress = Math.max(this.lastProgress + 0.001, (Date.now() - this.started) / 1000);
    this.call.answer.send({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: {
        progressToken: token,
        progress: this.lastProgress,
        total: this.waitSeconds,
        message: `Waiting for a human ruling${count}: ${pageOf(this.ctx, this.id)}`,
      },
    });
  }

  /** The wait is over: answers the decision as it stands. */
  private end(ended: WaitEnd): void {
    const final = this.seen.final;
    (final ? Promise.resolve(final) : this.read()).then((answer) => {
      const offered = this.offered;
      if (offered) {
        // The page offered is done with: ruled, the client is told the interaction completed;
        // otherwise the offer is withdrawn, as a request the server no longer waits on.
        this.call.answer.send(
          ended === 'ruled'
            ? { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: offered.elicitationId } }
            : {
                jsonrpc: '2.0',
                method: 'notifications/cancelled',
                params: { requestId: offered.requestId, reason: `The wait ended (${ended}).` },
              },
        );
      }
      this.settle(resultOf(answer, { wait: { ended, waited_ms: Date.now() - this.started } }));
    }, this.fail);
  }

  private readonly fail = (err: unknown): void => {
    this.release();
    this.reject(err);
  };

  private settle(result: CallToolResult): void {
    this.release();
    this.resolve(result);
  }
}

/** The decision page a wait offers and reports. */
function pageOf(ctx: McpContext, id: string): string {
  return new URL(`/decisions/${id}`, ctx.runtime.env.APP_URL).toString();
}

/**
 * Raises the decision (POST /decisions): the tool's answer when there is nothing to wait for (an
 * error, wait_seconds 0, a decision already ruled: an idempotent replay), else the decision's id and title.
 */
async function raise(
  ctx: McpContext,
  tool: Tool,
  args: Record<string, unknown>,
  caller: Caller,
  waitSeconds: number,
): Promise<{ result: CallToolResult } | { id: string; title: string | undefined }> {
  const raised = await callTool(ctx.handle, tool, args, caller, ctx.runtime.env.APP_URL);
  const decision = (raised.body as { decision?: { id: string; status: string; title?: string } }).decision;
  if (raised.status >= 400 || !decision) return { result: resultOf(raised) };
  if (waitSeconds === 0 || decision.status !== 'pending')
    return { result: resultOf(raised, { wait: { ended: 'not_waited', waited_ms: 0 } }) };
  return { id: decision.id, title: decision.title };
}

/** A read of the decision, kept whole only when it ends the wait (ruled, or an error). */
interface Glance {
  final: ToolAnswer | null;
  approvals: number;
  required: number | undefined;
}

/**
 * Offers the decision page to a client that can open a URL (URL-mode elicitation, as it declared
 * at initialize): the human sees a link to the page where they rule. Its answer (opened or not)
 * changes nothing here, so nothing waits for it; returns the offer's ids, or null when the client
 * cannot take one.
 */
function offerPage(
  session: McpSession,
  call: WaitCall,
  page: string,
  title: string | undefined,
): { elicitationId: string; requestId: string } | null {
  if (!session.urlElicitation) return null;
  const elicitationId = randomUUID();
  const requestId = session.nextRequestId();
  call.answer.send({
    jsonrpc: '2.0',
    id: requestId,
    method: 'elicitation/create',
    params: {
      mode: 'url',
      elicitationId,
      url: page,
      message: `An agent is waiting for your ruling${title ? ` on “${title}”` : ''}. Open the decision page to approve or decline.`,
    },
  });
  return { elicitationId, requestId };
}
