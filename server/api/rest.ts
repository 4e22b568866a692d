/**
 * The REST transport for /api/v1: each request found in the operations table (read once from the
 * procedures' OpenAPI meta, server/api/operations.ts) and run as its tRPC procedure, or answered
 * by what the table says serves it (server/api/served-operations.ts), with what the contract asks
 * around it. No path is named here: what an operation needs beyond the rest (a per-address
 * limit, its own body reader, its own error shape) is in the table. Before a procedure runs: a request id, the API key resolved and
 * counted, the body read once with its limit enforced while reading, the media type, strict JSON
 * objects. After: X-Request-Id and the security headers on every answer, and every error in the
 * contract's envelope, mapped once from the one error table (server/errors.ts).
 *
 * It works on a small view of the request (server/http/exchange.ts) that node:http gives directly
 * in production (server/http/node-api.ts); nothing is converted to fetch objects on the way.
 */
import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { AppError, isStoreUnavailable, sqlStateOf } from '@/server/errors';
import { BodyCutOff, jsonAnswer, type Answer, type ApiRequest } from '@/server/http/exchange';
import { transportSecurityHeaders } from '@/server/http/transport-security';
import { describeError as describe, log, logs, stackFrames } from '@/server/log';
import { countDbError, countRequest } from '@/server/metrics';
import type { Runtime } from '@/server/runtime';
import { readStrictJson, utf8 } from '@/server/strict-json';
import { presentKey, type PresentedKey } from './api-key-auth';
import { jsonText } from './mutation';
import { createApiContext } from './context';
import { findOperation } from './operations';
import { queryInput, queryOnBodyOperation } from './query-input';
import { allowValidatorRequest } from './receipt-validator';
import { callProcedure } from './trpc-internals';
import { fromValidationIssues, hasIssues } from './validation-issues';

const API_BASE = '/api/v1';

/** What a request was, as far as its dispatch got: for the metrics and the access log. */
interface Seen {
  operation: string;
  keyId?: string;
  workspaceId?: string;
  userId?: string;
  /** Where the procedure's input came from, once dispatch has built it: to name a refused member (docs/contract.md §10.8). */
  input?: InputPlaces;
}

/** A procedure's input is the path parameters plus the body's members, or plus the query parameters. */
interface InputPlaces {
  pathParams: readonly string[];
  fromQuery: boolean;
}

/** Methods whose request carries a body (a DELETE's is read and checked, and takes no input). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * On every API answer: it is data, never a page, so nothing in it may load, run or be framed, even
 * if a browser is tricked into rendering it (OWASP REST Security Cheat Sheet, security headers).
 * `sandbox` puts whatever a browser does render (an artifact's content opened directly)
 * in an opaque origin without scripts: never a page of the app's origin.
 */
export const SECURITY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; sandbox",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

export interface RestHandlerOptions {
  /** The runtime to serve from (the process runtime in the app; a test database in tests). */
  runtime: () => Promise<Runtime>;
}

/** True when `headers` has `name` in any letter case. */
function hasHeader(headers: Record<string, string>, name: string): boolean {
  const lower = name.toLowerCase();
  for (const key in headers) if (key.toLowerCase() === lower) return true;
  return false;
}

/**
 * A request's credential already resolved and counted by the door it came through: the MCP
 * endpoint (server/mcp/http.ts) resolves the key of each of its HTTP requests once, and its tool
 * calls run here without being counted a second time.
 */
export interface ResolvedCredential {
  presented: PresentedKey | null;
}

/** Builds the handler for every /api/v1 request. */
export function createRestHandler(opts: RestHandlerOptions) {
  return async function handle(request: ApiRequest, credential?: ResolvedCredential): Promise<Answer> {
    const requestId = randomUUID();
    const started = performance.now();
    // Headers decided before the answer is (the rate limit's), for success and error alike.
    const extraHeaders: Record<string, string> = {};
    // What the metrics and the access log say of this request: its operation (the route template,
    // once dispatch has found it) and who called (ids only), as far as dispatch got.
    const seen: Seen = { operation: 'unmatched' };
    let answer: Answer;
    try {
      answer = await dispatch(request, requestId, opts, extraHeaders, seen, credential);
    } catch (err) {
      answer = errorAnswer(requestId, toAppError(err, requestId, seen.input), await appUrlOf(opts));
    }
    const headers = answer.headers;
    for (const name in extraHeaders) if (!hasHeader(headers, name)) headers[name] = extraHeaders[name]!;
    Object.assign(headers, SECURITY_HEADERS, transportSecurityHeaders(await appUrlOf(opts)));
    headers['X-Request-Id'] = requestId;
    if (!hasHeader(headers, 'Cache-Control')) headers['Cache-Control'] = 'no-store';
    const seconds = (performance.now() - started) / 1000;
    countRequest(seen.operation, answer.status, seconds);
    // The access log: a line per request (LOG_LEVEL info; a 5xx at warn). The route template, never
    // the raw path or query, and ids, never a credential or a body: nothing in it can carry a secret.
    const level = answer.status >= 500 ? 'warn' : 'info';
    if (logs(level)) {
      log(level, 'request', {
        requestId,
        operation: seen.operation,
        status: answer.status,
        ms: Math.round(seconds * 1000),
        // An event stream's length is not known when it starts.
        bytes: answer.stream ? null : Buffer.byteLength(answer.body ?? ''),
        workspaceId: seen.workspaceId ?? null,
        ...(seen.userId ? { userId: seen.userId } : { keyId: seen.keyId ?? null }),
      });
    }
    return answer;
  };
}

async function dispatch(
  request: ApiRequest,
  requestId: string,
  opts: RestHandlerOptions,
  extraHeaders: Record<string, string>,
  seen: Seen,
  credential: ResolvedCredential | undefined,
): Promise<Answer> {
  const { url, method } = request;
  if (!url.pathname.startsWith(API_BASE + '/') && url.pathname !== API_BASE) {
    throw new AppError('not_found', 'No such route.');
  }
  const rawApiPath = url.pathname.slice(API_BASE.length);
  const match = findOperation(method, rawApiPath);
  const operation = match?.operation;
  if (operation) seen.operation = `${method} ${operation.path}`;
  // The public validator is limited per client address before anything else is read.
  if (operation?.meta.limitedPerAddress) {
    const allowance = await allowValidatorRequest(request, opts.runtime);
    if (!allowance.ok) {
      if (operation.refusal) return operation.refusal(allowance.error);
      throw allowance.error;
    }
    Object.assign(extraHeaders, allowance.headers);
  }
  // No operation defines it, and a plain object cannot hold it as a key (assigning it replaces the
  // object's prototype): the query readers would drop it silently instead of refusing it. An
  // operation the transport serves alone reads no query into an input (the validator ignores it,
  // the import refuses any).
  if (operation?.procedure !== null && url.searchParams.has('__proto__')) {
    throw new AppError('unknown_field', 'Unknown query parameter: __proto__.', { fields: ['query.__proto__'] });
  }
  const runtime = await opts.runtime();
  // A presented API key is resolved and counted once, before the body is read, on every route
  // that is not public (unknown routes too); its 401, if any, comes where a credential is needed.
  const presented = operation?.isPublic
    ? null
    : credential
      ? credential.presented
      : await presentKey(runtime, request.headers.get('authorization'));
  if (presented) Object.assign(extraHeaders, presented.headers);
  if (presented?.key) Object.assign(seen, { keyId: presented.key.keyId, workspaceId: presented.key.workspaceId });
  if (!match || !operation) throw new AppError('not_found', 'No route for this method and path.');
  // An operation the transport answers itself, in whole or in part (served-operations.ts).
  if (operation.serve) {
    const served = await operation.serve(request, { runtime, presented, requestId });
    if (served) return served;
  }
  const { params } = match;
  const procedure = operation.procedure;
  if (!procedure) throw new Error(`${seen.operation}: served by neither the transport nor a procedure`);

  const limit = operation.meta.bodyLimitBytes ?? runtime.env.API_BODY_LIMIT_BYTES;
  const body = BODY_METHODS.has(method) ? await readJsonBody(request, limit) : undefined;
  // Operations with a body define no query parameters; like unknown body fields, they are refused.
  if (body !== undefined && url.search.length > 1) throw queryOnBodyOperation(url);
  let input: Record<string, unknown> | undefined;
  if (procedure.noInput) input = undefined;
  else if (body !== undefined && method !== 'DELETE') {
    // A body field named like a path parameter would be silently replaced by it: refused instead.
    const clashes = operation.params.filter((p) => Object.hasOwn(body, p));
    if (clashes.length > 0) {
      throw new AppError('unknown_field', `${clashes.join(', ')} comes from the path, not the body.`, { fields: clashes });
    }
    input = { ...body, ...params };
    seen.input = { pathParams: operation.params, fromQuery: false };
  } else {
    input = { ...queryInput(url, procedure.arrayParams), ...params };
    seen.input = { pathParams: operation.params, fromQuery: true };
  }

  const ctx = createApiContext(runtime, {
    transport: 'rest',
    requestId,
    method,
    url,
    headers: request.headers,
    body,
    presentedKey: presented,
  });
  // Straight to the procedure (its middlewares, input and output checks), without a caller proxy.
  const data = await callProcedure(procedure.run, procedure.path, ctx, input).finally(() => {
    if (ctx.caller && 'userId' in ctx.caller) seen.userId = ctx.caller.userId;
  });
  const status = ctx.res.status ?? 200;
  const raw = ctx.res.raw;
  const headers = { ...ctx.res.headers, 'Content-Type': raw ? raw.contentType : 'application/json' };
  // Not modified and no content: the headers, no body.
  if (status === 204 || status === 304) return { status, headers };
  return { status, headers, body: raw ? raw.body : jsonText(ctx, data) };
}

/** How deep a request body may nest, counting the body itself (the receipt reader's limit too). */
export const MAX_BODY_DEPTH = 64;

/**
 * Reads the body, refusing more than `limit` bytes while reading (a lying or absent
 * Content-Length cannot get past it), and parses it as a UTF-8 JSON object.
 */
async function readJsonBody(request: ApiRequest, limit: number): Promise<Record<string, unknown>> {
  const bytes = await request.body(limit);
  if (!bytes) throw tooLarge(limit);
  if (bytes.length === 0) return {};

  const contentType = request.headers.get('content-type');
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    throw new AppError(
      'unsupported_media_type',
      contentType
        ? `Content-Type ${contentType.slice(0, 100)} is not supported; send application/json.`
        : 'Send Content-Type: application/json.',
    );
  }
  const text = utf8(bytes);
  if (text === null) throw new AppError('invalid_json', 'The body is not valid UTF-8.');
  // Strict: a repeated member name or nesting deeper than MAX_BODY_DEPTH is refused, not kept
  // the way JSON.parse would keep it (see server/strict-json.ts).
  const read = readStrictJson(text, { maxDepth: MAX_BODY_DEPTH });
  if (!read.ok) {
    const p = read.problem;
    if (p.kind === 'syntax') throw new AppError('invalid_json', `The body is not valid JSON: ${p.message} at byte ${p.offset}.`);
    if (p.kind === 'unstorable') throw unstorableValue(p.path, p.message);
    throw new AppError('invalid_json', `The body is refused: ${p.message}${p.path ? ` (at ${p.path})` : ''}.`);
  }
  const parsed = read.value;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new AppError('invalid_json', 'The body must be a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

/**
 * A value no store keeps (U+0000, a lone surrogate, a number beyond a double), in free-form JSON or
 * any field: 400 validation_failed like any field that breaks its rule, its issue's path dotted as
 * the others are, and its JSON pointer (RFC 6901) beside it, exact whatever the member names hold.
 */
function unstorableValue(pointer: string, message: string): AppError {
  const path = pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  return new AppError('validation_failed', `${path || 'body'}: ${message}.`, { issues: [{ path, pointer, message }] });
}

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `The body is larger than ${limit} bytes.`, { limitBytes: limit });
}

/**
 * Maps whatever was thrown to the contract's error, once: a procedure's AppError reaches here as
 * the cause of the TRPCError tRPC wraps it in, and an input the procedure's schema refused as a
 * BAD_REQUEST with the schema's issues. Unexpected errors are logged, never shown.
 */
function toAppError(err: unknown, requestId: string, input: InputPlaces | undefined): AppError {
  const cause = err instanceof TRPCError ? (err.cause ?? err) : err;
  if (cause instanceof AppError) return placed(cause, input);
  const sqlState = sqlStateOf(cause);
  if (sqlState) countDbError(sqlState);

  if (err instanceof TRPCError && err.code === 'BAD_REQUEST' && hasIssues(cause)) {
    return fromValidationIssues(cause.issues, (dotted) => placeName(dotted, input));
  }
  // The client left mid-body: not the database's doing (its ECONNRESET is the client's socket).
  if (cause instanceof BodyCutOff) return new AppError('invalid_json', cause.message);
  if (isStoreUnavailable(cause)) {
    log('warn', 'store unavailable', { requestId, error: describe(cause) });
    return new AppError('service_unavailable', 'The database is unavailable or busy. Retry shortly.');
  }
  log('error', 'unexpected error', { requestId, error: describe(cause), stack: stackFrames(cause) });
  return new AppError('internal_error', 'An unexpected error occurred. Retry with the same Idempotency-Key.');
}

/** A member of a procedure's input named where the caller put it (docs/contract.md §10.8): `path.id`, `query.limit`, a body's bare. */
function placeName(dotted: string, input: InputPlaces | undefined): string {
  if (!input || dotted === '' || PLACED.test(dotted)) return dotted;
  if (input.pathParams.includes(dotted.split('.', 1)[0]!)) return `path.${dotted}`;
  return input.fromQuery ? `query.${dotted}` : dotted;
}
const PLACED = /^(query|path|header)\./;

/**
 * A procedure's own refusal of a member (a filter it checks itself) named the way the schema's are:
 * the procedure knows the member, not whether the caller sent it in the query or the path.
 */
function placed(error: AppError, input: InputPlaces | undefined): AppError {
  if (!input) return error;
  const { fields, issues } = error.details as { fields?: unknown; issues?: unknown };
  if (error.code === 'unknown_field' && Array.isArray(fields)) {
    error.details.fields = fields.map((f) => (typeof f === 'string' ? placeName(f, input) : f));
  }
  if (error.code === 'validation_failed' && Array.isArray(issues)) {
    error.details.issues = issues.map((i: { path?: unknown }) =>
      typeof i?.path === 'string' ? { ...i, path: placeName(i.path, input) } : i,
    );
  }
  return error;
}

async function appUrlOf(opts: RestHandlerOptions): Promise<string> {
  try {
    return (await opts.runtime()).env.APP_URL;
  } catch {
    return 'http://localhost:3000';
  }
}

/** The contract's error body (section 1): what every door answers an error with. */
export function errorBody(requestId: string, error: AppError, appUrl: string) {
  return {
    error: {
      code: error.code,
      message: error.message,
      details: error.details,
      requestId,
      timestamp: new Date().toISOString(),
      docsUrl: `${appUrl.replace(/\/$/, '')}${API_BASE}/errors?code=${error.code}`,
      retryAfter: error.retryAfter,
    },
  };
}

/** The contract's error envelope, with Retry-After and WWW-Authenticate where they belong. */
export function errorAnswer(requestId: string, error: AppError, appUrl: string): Answer {
  const body = errorBody(requestId, error, appUrl);
  const headers: Record<string, string> = { ...error.extras.headers };
  // 429 and 503 always; any other error worth retrying (409 idempotency_in_progress) too.
  if (body.error.retryAfter > 0) headers['Retry-After'] = String(body.error.retryAfter);
  if (error.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="api"';
  return jsonAnswer(error.status, body, headers);
}
