/**
 * The MCP server of one session: the tools (server/mcp/tools.ts, each a REST operation run through
 * the REST transport by server/mcp/call.ts), request_decision's wait for the ruling, and the two
 * resources. It holds no state of its own beyond the session: the caller's key comes with each
 * request (`authInfo`, resolved and counted by server/mcp/http.ts), so a key revoked mid-session is
 * refused at its next request.
 */
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { admitWaiter } from '@/server/capacity';
import { AppError } from '@/server/errors';
import { hubOf } from '@/server/ledger/feed';
import type { Runtime } from '@/server/runtime';
import { callTool, refusal, type Caller, type RestHandle, type ToolAnswer } from './call';
import { resourceReaders, tools, WAIT_SECONDS_MAX, type Tool } from './tools';
import { DecisionWatch } from './wait';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** How often a waiting request_decision reports progress when nothing happens (keeps proxies and client timeouts alive). */
const PROGRESS_EVERY_MS = 10_000;

export interface McpContext {
  runtime: Runtime;
  handle: RestHandle;
  /** Aborted when the service stops: waits answer the decision as it stands. */
  stopping: AbortSignal;
  /** Tool calls under way in this process (stopping lets them answer before the database closes). */
  calls: { running: number };
  /** Aborted when the connection that carries the call's answer closes before it (server/mcp/http.ts). */
  hangUp(requestId: string | number): AbortSignal;
  /** Writes a keepalive comment on the call's answer (server/mcp/transport.ts). */
  keepAlive(requestId: string | number): void;
}

const INSTRUCTIONS =
  'The Accountable Work Service: the system of record for agent work. Create work and claim it, keep the run alive ' +
  'with heartbeat or checkpoint, and finish it with what you delivered. Before an action that needs a human’s ' +
  'approval, call request_decision with wait_seconds and do not act until its status is approved; then present the ' +
  'grant with consume_grant. Every change is recorded in a hash-chained ledger (read_events, verify_ledger). Errors ' +
  'come back as the REST API’s: {error: {code, message, details, requestId}}.';

/** The caller's key, as the endpoint resolved it for this request. */
function callerOf(extra: Extra): Caller {
  const caller = extra.authInfo?.extra as Partial<Caller> | undefined;
  if (!caller?.presented?.key || !caller.authorization) throw new McpError(ErrorCode.InvalidRequest, 'No API key on this request.');
  return caller as Caller;
}

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

/**
 * One JSON Schema validator for every session: the SDK makes an Ajv instance per server unless
 * given one, about 40 KB each, which was most of what an open MCP wait cost (bench --only waiters).
 * (It checks form elicitations' answers, which this server never asks for.)
 */
let validator: AjvJsonSchemaValidator | null = null;

/** A new MCP server for one session. */
export function createMcpServer(ctx: McpContext): Server {
  validator ??= new AjvJsonSchemaValidator();
  const server = new Server(
    { name: 'accountable-work-service', title: 'Accountable Work Service', version: '1' },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: validator },
  );
  const appUrl = ctx.runtime.env.APP_URL;
  const all = tools();

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...all.values()].map(listed) }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = all.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `No tool named ${request.params.name}.`);
    const args = request.params.arguments ?? {};
    const caller = callerOf(extra);
    ctx.calls.running++;
    try {
      if (tool.name === 'request_decision') return await requestDecision(ctx, server, tool, args, caller, extra);
      return resultOf(await callTool(ctx.handle, tool, args, caller, appUrl));
    } finally {
      ctx.calls.running--;
    }
  });

  const readers = resourceReaders();
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      {
        uri: 'ledger://checkpoint',
        name: 'checkpoint',
        title: 'The ledger’s latest signed checkpoint',
        description:
          'The workspace ledger’s newest signed checkpoint (C2SP signed note over its Merkle tree head), as GET /ledger/checkpoint.',
        mimeType: 'application/json',
      },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: 'decision://{id}',
        name: 'decision',
        title: 'A decision',
        description: 'A decision as it stands, as GET /decisions/{id}: status, ruling, chosen option, edited arguments, grant.',
        mimeType: 'application/json',
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { uri } = request.params;
    const caller = callerOf(extra);
    const decision = /^decision:\/\/([^/?#]+)$/.exec(uri);
    let answer: ToolAnswer;
    if (uri === 'ledger://checkpoint') answer = await callTool(ctx.handle, readers.checkpoint, {}, caller, appUrl);
    else if (decision) answer = await callTool(ctx.handle, readers.decision, { id: decision[1] }, caller, appUrl);
    else throw new McpError(-32002, `No resource ${uri}: read ledger://checkpoint or decision://{id}.`);
    if (answer.status === 404) throw new McpError(-32002, `Resource not found: ${uri}.`, answer.body);
    if (answer.status >= 400) throw new McpError(ErrorCode.InvalidRequest, `Reading ${uri} failed (${answer.status}).`, answer.body);
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(answer.body) }] };
  });
  return server;
}

/** What a wait ended with, beside the decision. */
type WaitEnd = 'not_waited' | 'ruled' | 'wait_elapsed' | 'cancelled' | 'service_stopping';

/**
 * request_decision: raises the decision (POST /decisions), then, with wait_seconds, waits on the
 * workspace's feed until the decision's ledger moves to a ruling or the wait ends, reporting
 * progress and offering the decision page's URL to a client that can open one. It answers the
 * decision as GET /decisions/{id} then gives it, with `wait: {ended, waited_ms}`.
 */
async function requestDecision(
  ctx: McpContext,
  server: Server,
  tool: Tool,
  args: Record<string, unknown>,
  caller: Caller,
  extra: Extra,
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
  let watch: DecisionWatch | null = null;
  try {
    // Only what the wait needs is kept while it waits (a decision's whole answer is kilobytes,
    // and ten thousand may wait at once): the answer is read again when the wait ends.
    const raised = await raise(ctx, tool, args, caller, waitSeconds);
    if ('result' in raised) return raised.result;
    const { id, title } = raised;

    const reader = resourceReaders().decision;
    const read = () => callTool(ctx.handle, reader, { id }, caller, appUrl);
    // Joined before the decision is read again: a ruling that commits after this read reaches the watch.
    watch = new DecisionWatch(hub, key.keyId, key.workspaceId, id);
    await watch.start();
    const signal = AbortSignal.any([extra.signal, ctx.stopping, ctx.hangUp(extra.requestId)]);
    const page = new URL(`/decisions/${id}`, appUrl).toString();
    const progress = progressReporter(extra, waitSeconds, page, started);
    const offered = offerPage(server, extra, page, title, deadline);
    let seen = await glance(read);
    let ended: WaitEnd = 'wait_elapsed';
    for (;;) {
      if (seen.final) {
        if (seen.final.status >= 400) return resultOf(seen.final);
        ended = 'ruled';
        break;
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      await progress(seen.approvals, seen.required);
      // A client that asked for no progress still hears from a wait this often: proxies close quiet connections.
      ctx.keepAlive(extra.requestId);
      const why = await watch.next(Math.min(left, PROGRESS_EVERY_MS), signal);
      if (why === 'moved') seen = await glance(read);
      else if (why === 'aborted') {
        ended = ctx.stopping.aborted ? 'service_stopping' : 'cancelled';
        break;
      } else if (why === 'access_ended') {
        return resultOf(refusal(new AppError('unauthorized', 'The API key was revoked while waiting.'), appUrl));
      } else if (why === 'failed') {
        // The feed could not read: the decision as it stands, from a read of its own.
        break;
      }
    }
    const final = seen.final ?? (await read());
    if (offered && ended === 'ruled') {
      void server
        .createElicitationCompletionNotifier(offered.elicitationId, { relatedRequestId: extra.requestId })()
        .catch(() => undefined);
    }
    // The offer is not waited on past the wait.
    offered?.done.abort();
    return resultOf(final, { wait: { ended, waited_ms: Date.now() - started } });
  } finally {
    watch?.stop();
    place.release();
  }
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

async function glance(read: () => Promise<ToolAnswer>): Promise<Glance> {
  const answer = await read();
  const decision = (answer.body as { decision?: { status?: string; approvals?: unknown[]; policy?: { approvals_required?: number } } })
    .decision;
  if (answer.status >= 400 || decision?.status !== 'pending') return { final: answer, approvals: 0, required: undefined };
  return { final: null, approvals: decision.approvals?.length ?? 0, required: decision.policy?.approvals_required };
}

/** Sends progress notifications when the client asked for them (a progressToken); otherwise does nothing. */
function progressReporter(extra: Extra, waitSeconds: number, page: string, started: number) {
  const token = extra._meta?.progressToken;
  // Seconds waited so far, strictly increasing from one notification to the next (the protocol asks it).
  let last = -1;
  return async (approvals: number, required: number | undefined) => {
    if (token === undefined) return;
    const count = required && required > 1 ? ` (${approvals} of ${required} approvals)` : '';
    await extra
      .sendNotification({
        method: 'notifications/progress',
        params: {
          progressToken: token,
          progress: (last = Math.max(last + 0.001, (Date.now() - started) / 1000)),
          total: waitSeconds,
          message: `Waiting for a human ruling${count}: ${page}`,
        },
      })
      .catch(() => undefined);
  };
}

/**
 * Offers the decision page to a client that can open a URL (URL-mode elicitation): the human sees
 * a link to the page where they rule. The answer (opened or not) changes nothing here, so it is not
 * awaited; returns the elicitation's id, or null when the client cannot take one.
 */
function offerPage(
  server: Server,
  extra: Extra,
  page: string,
  title: string | undefined,
  deadline: number,
): { elicitationId: string; done: AbortController } | null {
  if (!server.getClientCapabilities()?.elicitation?.url) return null;
  const elicitationId = randomUUID();
  const done = new AbortController();
  void server
    .elicitInput(
      {
        mode: 'url',
        elicitationId,
        url: page,
        message: `An agent is waiting for your ruling${title ? ` on “${title}”` : ''}. Open the decision page to approve or decline.`,
      },
      { relatedRequestId: extra.requestId, timeout: Math.max(1000, deadline - Date.now()), signal: done.signal },
    )
    .catch(() => undefined);
  return { elicitationId, done };
}
