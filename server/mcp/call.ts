/**
 * Running a tool: its arguments put back where the REST operation takes them (path, query,
 * headers, JSON body) and the request handed to the REST transport in this process, with the
 * caller's key as the MCP endpoint resolved it. The procedure, its checks, its errors, its
 * idempotency record and its ledger events are exactly the REST request's: a tool call is one.
 *
 * An argument the tool does not define goes where the operation's other members go, so the
 * transport refuses it by name (400 unknown_field), as it refuses one sent over REST. The answer
 * becomes MCP's tool result here too (resultOf).
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { PresentedKey } from '@/server/api/api-key-auth';
import { errorBody, type ResolvedCredential } from '@/server/api/rest';
import { AppError } from '@/server/errors';
import { discard, type Answer, type ApiRequest } from '@/server/http/exchange';
import type { Tool } from './tools';

export type RestHandle = (request: ApiRequest, credential?: ResolvedCredential) => Promise<Answer>;

/** Who calls: the key as the endpoint resolved and counted it, and the Authorization header that presented it. */
export interface Caller {
  presented: PresentedKey;
  authorization: string;
}

/** What a tool call answered: the REST status, the body it would have sent (parsed), and its headers. */
export interface ToolAnswer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** A tool's answer as MCP's result: the body as structured content and as text, the error flagged, the HTTP facts in _meta. */
export function resultOf(answer: ToolAnswer, extra?: Record<string, unknown>): CallToolResult {
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

/** A refusal before the operation runs (an argument that cannot be placed), in the contract's envelope. */
export function refusal(error: AppError, appUrl: string): ToolAnswer {
  const requestId = randomUUID();
  return { status: error.status, body: errorBody(requestId, error, appUrl), headers: { 'X-Request-Id': requestId } };
}

/**
 * The value of the path parameter `arg`, checked before it becomes a path segment: a string its
 * procedure's schema accepts (a UUID for an id). The URL the request is built on is resolved, so a
 * segment `.` or `..` would name another operation (`decisions/.` is the list); the check is made
 * here, for every tool, not left to the operation that would have been reached.
 */
function pathSegment(arg: string, value: unknown, schema: z.ZodType | undefined): string {
  const refuse = (message: string) => new AppError('validation_failed', `${arg}: ${message}`, { issues: [{ path: arg, message }] });
  if (typeof value !== 'string' || value === '') throw refuse('Required, a string.');
  if (value === '.' || value === '..') throw refuse('Not a path segment of its own.');
  const checked = schema?.safeParse(value);
  if (checked && !checked.success) throw refuse(checked.error.issues[0]?.message ?? 'Invalid.');
  return value;
}

/** Builds the REST request for `args` (without the tool's own arguments); throws AppError for one that cannot be placed. */
function requestFor(tool: Tool, args: Record<string, unknown>, authorization: string): ApiRequest {
  let path = tool.path;
  for (const [name, value] of Object.entries(tool.fixed ?? {})) path = path.replace(`{${name}}`, value);
  const query = new URLSearchParams();
  const headers = new Map<string, string>();
  const body: Record<string, unknown> = {};
  for (const [arg, place] of tool.places) {
    if (place.in !== 'path') continue;
    path = path.replace(`{${place.name}}`, encodeURIComponent(pathSegment(arg, args[arg], place.schema)));
  }
  for (const [arg, value] of Object.entries(args)) {
    if (value === undefined || tool.own?.[arg]) continue;
    // What the tool leaves out of the operation (the event stream's SSE form, resume_run's action)
    // is refused by name, as an unknown member is.
    if (tool.omit?.includes(arg) || tool.fixed?.[arg] !== undefined || arg === '__proto__') {
      throw new AppError('unknown_field', `Unknown field: ${arg}.`, { fields: [arg] });
    }
    const place = tool.places.get(arg) ?? { in: tool.method === 'GET' ? 'query' : 'body', name: arg };
    if (place.in === 'path') continue;
    if (place.in === 'body') body[place.name] = value;
    else if (place.in === 'header') {
      if (typeof value !== 'string') {
        throw new AppError('validation_failed', `${arg}: must be a string.`, { issues: [{ path: arg, message: 'Must be a string.' }] });
      }
      headers.set(place.name, value);
    } else {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (item !== null && typeof item === 'object') {
          throw new AppError('validation_failed', `${arg}: must be a string, number or boolean, or a list of them.`, {
            issues: [{ path: arg, message: 'Must be a string, number or boolean, or a list of them.' }],
          });
        }
        query.append(place.name, String(item));
      }
    }
  }
  headers.set('authorization', authorization);
  const url = new URL(`/api/v1${path}`, 'http://127.0.0.1');
  url.search = query.toString();
  let bytes: Buffer | undefined;
  if (tool.method !== 'GET') {
    bytes = Buffer.from(JSON.stringify(body), 'utf8');
    headers.set('content-type', 'application/json');
  }
  return {
    method: tool.method,
    url,
    headers: { get: (name) => headers.get(name.toLowerCase()) ?? null },
    body: (limit) => Promise.resolve(bytes === undefined ? Buffer.alloc(0) : bytes.length > limit ? null : bytes),
  };
}

/** Runs `tool` with `args` as `caller`, through the REST transport. */
export async function callTool(
  handle: RestHandle,
  tool: Tool,
  args: Record<string, unknown>,
  caller: Caller,
  appUrl: string,
): Promise<ToolAnswer> {
  let request: ApiRequest;
  // Left out, the workspace is the key's (server/mcp/tools.ts).
  if (tool.places.has('workspace_id') && args.workspace_id === undefined)
    args = { ...args, workspace_id: caller.presented.key!.workspaceId };
  try {
    request = requestFor(tool, args, caller.authorization);
  } catch (err) {
    if (err instanceof AppError) return refusal(err, appUrl);
    throw err;
  }
  const answer = await handle(request, { presented: caller.presented });
  // A tool never asks for a streamed answer; one that came anyway (it cannot, see requestFor) is
  // ended at once rather than left holding its lease.
  if (answer.stream) {
    discard(answer.stream);
    throw new Error(`${tool.name}: the operation answered with a stream`);
  }
  const text = answer.body === undefined ? '' : String(answer.body);
  const json = (answer.headers['Content-Type'] ?? '').startsWith('application/json');
  return { status: answer.status, body: json && text !== '' ? (JSON.parse(text) as unknown) : text, headers: answer.headers };
}
