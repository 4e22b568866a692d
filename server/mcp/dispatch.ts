/**
 * The MCP server's dispatch: answers each JSON-RPC request of a session (server/mcp/transport.ts)
 * — the handshake, the tools (server/mcp/tools.ts, each a REST operation run through the REST
 * transport by server/mcp/call.ts) and the two resources — and hears the client's notifications.
 * request_decision, which may wait for a ruling, is server/mcp/request-decision.ts. The SDK's
 * schemas check every request; what a session keeps is server/mcp/transport.ts's McpSession. The
 * caller's key comes with each request (resolved and counted by server/mcp/http.ts), so a key
 * revoked mid-session is refused at its next request.
 */
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  InitializeRequestSchema,
  LATEST_PROTOCOL_VERSION,
  ReadResourceRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { describeError, log } from '@/server/log';
import { gatewayServers, listedTools } from '@/server/gateway/catalog';
import { callTool, resultOf, type Caller, type ToolAnswer } from './call';
import { callGatewayTool } from './gateway-call';
import { requestDecision } from './request-decision';
import type { McpContext } from './sessions';
import { resourceReaders, tools, type Tool } from './tools';
import type { CallAnswer, McpSession } from './transport';

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
    case 'tools/list': {
      // The service's own tools, then those of the MCP servers the workspace fronts (server/gateway).
      const servers = await gatewayServers(ctx.runtime.db, caller.presented.key!.workspaceId);
      return { tools: [...[...tools().values()].map(listed), ...listedTools(servers)] };
    }
    case 'tools/call': {
      const { params } = parsed(CallToolRequestSchema, request);
      const tool = tools().get(params.name);
      const args = params.arguments ?? {};
      if (!tool) {
        // Handed on, not awaited, as request_decision is: an asked call waits for its ruling.
        const call = { id: request.id, progressToken: params._meta?.progressToken, answer };
        return callGatewayTool(ctx, session, caller, params.name, args, params._meta, call).then((result) => {
          if (!result) throw new RpcError(ErrorCode.InvalidParams, `No tool named ${params.name}.`);
          return result;
        });
      }
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
      if (read.status === 400) throw new RpcError(ErrorCode.InvalidParams, `Invalid params: ${uri} names no resource.`, read.body);
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
