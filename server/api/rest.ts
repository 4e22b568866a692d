/**
 * The REST transport for /api/v1: trpc-to-openapi's handler wrapped with what the contract needs
 * and the adapter does not do. Before a procedure runs: a request id, the body limit enforced
 * while reading, the media type, strict JSON objects. After: X-Request-Id on every response and
 * every error rewritten into the contract's envelope through the one error table.
 *
 * The node-http handler is created once and given a Request-backed shim, like the adapter's own
 * fetch handler does, because that handler reads the whole body without a limit and, outside
 * production, regenerates the OpenAPI document on every request.
 */
import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { AppError, isStoreUnavailable } from '@/server/errors';
import { describeError as describe, log } from '@/server/log';
import type { Runtime } from '@/server/runtime';
import { presentKey, type PresentedKey } from './api-key-auth';
import { BodyCutOff, jsonStructureProblem, readBounded, utf8 } from './body';
import { serveEventPage } from './event-page';
import { serveEventStream } from './event-stream';
import {
  allowValidatorRequest,
  PUBLIC_VALIDATOR_ROUTES,
  serveReceiptImport,
  serveReceiptValidation,
  validatorErrorFrom,
} from './receipt-validator';
import { appRouter } from './root';
import type { ApiContext, Meta } from './trpc';
import { addressedOrigin } from '@/server/http/origin';

const API_BASE = '/api/v1';

const STATE = Symbol('requestState');

interface RequestState {
  requestId: string;
  runtime: Runtime;
  body: unknown;
  path: string;
  origin: string;
  /** The API key presented and counted by the transport (undefined: not resolved there). */
  presented: PresentedKey | null;
  error?: TRPCError;
}

type ShimRequest = Request & { [STATE]: RequestState };

const nodeHandler = createOpenApiNodeHttpHandler({
  router: appRouter,
  createContext: ({ req, res }: { req: ShimRequest; res: unknown }): ApiContext => {
    void res;
    const state = req[STATE];
    return {
      runtime: state.runtime,
      transport: 'rest',
      requestId: state.requestId,
      method: req.method,
      path: state.path,
      origin: state.origin,
      headers: req.headers,
      body: state.body,
      presentedKey: state.presented,
      res: { status: undefined, headers: {} },
    };
  },
  responseMeta: ({ ctx, errors }: { ctx?: ApiContext; errors: unknown[] }) =>
    errors.length === 0 && ctx ? { status: ctx.res.status ?? 200, headers: ctx.res.headers } : {},
  onError: ({ error, req }: { error: TRPCError; req: ShimRequest }) => {
    req[STATE].error = error;
  },
} as never) as unknown as (req: ShimRequest, res: ShimResponse) => Promise<void>;

interface ShimResponse {
  statusCode: number;
  setHeader(key: string, value: string | string[]): void;
  end(body?: string): void;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Path parameters by route. The adapter merges them over the body, so a body field named like one
 * (`{"id": …}` on /decisions/{id}/attention) would be silently dropped; it is refused instead.
 */
const pathParamsByRoute = Object.values(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>)
  .map((p) => p._def.meta?.openapi)
  .filter((o): o is NonNullable<typeof o> => Boolean(o))
  .map((o) => ({
    method: o.method,
    pattern: new RegExp(`^${o.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    params: [...o.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
  }))
  .filter((r) => r.params.length > 0);

/** Public operations (no credential): a key sent to them is neither resolved nor counted. */
const publicRoutes = Object.values(appRouter._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>)
  .map((p) => p._def.meta?.openapi)
  .filter((o): o is NonNullable<typeof o> => Boolean(o) && o!.protect === false)
  .map((o) => ({ method: o.method, pattern: new RegExp(`^${o.path.replace(/\{[^}]+\}/g, '[^/]+')}$`, 'i') }));

function isPublicRoute(method: string, route: string): boolean {
  const m = method === 'HEAD' ? 'GET' : method;
  return publicRoutes.some((r) => r.method === m && r.pattern.test(route));
}

function pathParamsIn(method: string, routePath: string, body: Record<string, unknown>): string[] {
  const route = pathParamsByRoute.find((r) => r.method === method && r.pattern.test(routePath));
  return route ? route.params.filter((p) => Object.hasOwn(body, p)) : [];
}

export interface RestHandlerOptions {
  /** The runtime to serve from (the process runtime in the app; a test database in tests). */
  runtime: () => Promise<Runtime>;
}

/** Builds the handler for every /api/v1 request. */
export function createRestHandler(opts: RestHandlerOptions) {
  return async function handle(request: Request): Promise<Response> {
    const requestId = randomUUID();
    const started = performance.now();
    // Headers decided before the response is (the rate limit's), for success and error alike.
    const extraHeaders: Record<string, string> = {};
    let response: Response;
    try {
      response = await dispatch(request, requestId, opts, extraHeaders);
    } catch (err) {
      response = errorResponse(requestId, toAppError(err, requestId), await appUrlOf(opts));
    }
    for (const [name, value] of Object.entries(extraHeaders)) if (!response.headers.has(name)) response.headers.set(name, value);
    response.headers.set('X-Request-Id', requestId);
    // An API answer is data, never a page: nothing in it may load, run or be framed, even if a
    // browser is tricked into rendering it (OWASP REST Security Cheat Sheet, security headers).
    response.headers.set('X-Content-Type-Options', 'nosniff');
    response.headers.set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
    response.headers.set('X-Frame-Options', 'DENY');
    response.headers.set('Referrer-Policy', 'no-referrer');
    if (!response.headers.has('Cache-Control')) response.headers.set('Cache-Control', 'no-store');
    log(response.status >= 500 ? 'warn' : 'debug', 'request', {
      requestId,
      method: request.method,
      path: new URL(request.url).pathname,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
    return response;
  };
}

async function dispatch(
  request: Request,
  requestId: string,
  opts: RestHandlerOptions,
  extraHeaders: Record<string, string>,
): Promise<Response> {
  const url = new URL(request.url);
  if (!url.pathname.startsWith(API_BASE + '/') && url.pathname !== API_BASE) {
    throw new AppError('not_found', 'No such route.');
  }
  // Routes match without regard to case (as the adapter matches them).
  const route = url.pathname.slice(API_BASE.length).replace(/\/+$/, '').toLowerCase();
  // The public validator is limited per client address before anything else is read.
  if (PUBLIC_VALIDATOR_ROUTES.has(route)) {
    const allowance = await allowValidatorRequest(request, opts.runtime);
    // POST …/validate reads its own body (byte limit, strict JSON) and answers in its own shape.
    if (request.method === 'POST' && route === '/agent-work-receipts/validate') {
      return allowance.ok ? serveReceiptValidation(request, allowance.headers) : validatorErrorFrom(allowance.error);
    }
    if (!allowance.ok) throw allowance.error;
    Object.assign(extraHeaders, allowance.headers);
  }
  // No operation defines it, and a plain object cannot hold it as a key (assigning it replaces the
  // object's prototype): the query readers would drop it silently instead of refusing it.
  if (url.searchParams.has('__proto__')) {
    throw new AppError('unknown_field', 'Unknown query parameter: __proto__.', { fields: ['__proto__'] });
  }
  const runtime = await opts.runtime();
  // A presented API key is resolved and counted once, before the body is read, on every route
  // that is not public (unknown routes too); its 401, if any, comes where a credential is needed.
  const presented = isPublicRoute(request.method, route) ? null : await presentKey(runtime, request.headers.get('authorization'));
  if (presented) Object.assign(extraHeaders, presented.headers);
  if (request.method === 'POST' && route === '/agent-work-receipts/import') {
    // It reads its own body, so the rule below (operations with a body take no query) is applied here.
    if (url.search.length > 1) throw queryOnBodyOperation(url);
    return serveReceiptImport(request, requestId, runtime, presented);
  }
  if (request.method === 'GET' && route === '/events/stream') {
    // The SSE form of the event stream is a long response of its own, outside the JSON adapter.
    if (url.searchParams.get('format') === 'sse') return serveEventStream(request, url, runtime, presented);
    // A plainly valid page is served from ledger text; anything else goes to the procedure.
    const page = await serveEventPage(request, url, runtime, presented);
    if (page) return page;
  }
  const body = BODY_METHODS.has(request.method) ? await readJsonBody(request, runtime.env.API_BODY_LIMIT_BYTES) : undefined;
  // Operations with a body define no query parameters; like unknown body fields, they are refused.
  if (body !== undefined && url.search.length > 1) throw queryOnBodyOperation(url);
  if (body !== undefined) {
    const clashes = pathParamsIn(request.method, url.pathname.slice(API_BASE.length), body);
    if (clashes.length > 0) {
      throw new AppError('unknown_field', `${clashes.join(', ')} comes from the path, not the body.`, { fields: clashes });
    }
  }
  // HEAD is GET without the body (the adapter would otherwise answer 204 to any HEAD).
  const method = request.method === 'HEAD' ? 'GET' : request.method;

  const state: RequestState = {
    requestId,
    runtime,
    body,
    path: url.pathname,
    origin: addressedOrigin(request.headers, url, runtime.env.TRUSTED_PROXY_HOPS),
    presented,
  };
  // The adapter collects the query into a plain object by `if (!parsed[key]) parsed[key] = []`, so
  // a parameter named like an Object.prototype member (`?constructor=x`) found the inherited
  // function there and failed (a 500) instead of reaching the schema as an unknown field. Given the
  // query already collected, without a prototype, it takes it as is.
  const query = Object.create(null) as Record<string, string[]>;
  url.searchParams.forEach((value, key) => (query[key] ??= []).push(value));
  const routeUrl = new URL(url.pathname.slice(API_BASE.length) + url.search, url.origin).toString();
  const shim = new Proxy(request, {
    get(target, prop) {
      if (prop === STATE) return state;
      if (prop === 'url') return routeUrl;
      if (prop === 'method') return method;
      if (prop === 'body') return body;
      if (prop === 'query') return query;
      // The adapter checks the media type; the body was read and checked above, so a body-less
      // POST (an empty body means {}) must not be refused for lacking a Content-Type.
      if (prop === 'headers' && body !== undefined) return withJsonContentType(target.headers);
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as ShimRequest;

  const adapterResponse = await new Promise<Response>((resolve, reject) => {
    const headers = new Headers();
    const res: ShimResponse = {
      statusCode: 200,
      setHeader(key, value) {
        if (typeof value === 'string') headers.set(key, value);
        else for (const v of value) headers.append(key, v);
      },
      end(text) {
        // 204 and 304 carry no body (Response refuses one).
        const bodyless = res.statusCode === 204 || res.statusCode === 304;
        resolve(new Response(bodyless ? null : text, { status: res.statusCode, headers }));
      },
    };
    nodeHandler(shim, res).catch(reject);
  });

  if (request.method === 'HEAD') {
    if (adapterResponse.status < 400) return new Response(null, { status: adapterResponse.status, headers: adapterResponse.headers });
    // The error's status and headers (Retry-After, WWW-Authenticate), without its body.
    const error = errorResponse(
      requestId,
      toAppError(state.error ?? new TRPCError({ code: 'INTERNAL_SERVER_ERROR' }), requestId),
      runtime.env.APP_URL,
    );
    return new Response(null, { status: error.status, headers: error.headers });
  }
  // Not modified: the validators and caching headers, no body.
  if (adapterResponse.status === 304) return new Response(null, { status: 304, headers: adapterResponse.headers });
  if (adapterResponse.status < 400) return adapterResponse;
  const appError = toAppError(state.error ?? new TRPCError({ code: 'INTERNAL_SERVER_ERROR' }), requestId);
  return errorResponse(requestId, appError, runtime.env.APP_URL);
}

function queryOnBodyOperation(url: URL): AppError {
  const fields = [...new Set(url.searchParams.keys())].map((k) => `query.${k}`);
  return new AppError('unknown_field', `This operation takes no query parameters: ${fields.join(', ')}.`, { fields });
}

function withJsonContentType(headers: Headers): Headers {
  const copy = new Headers(headers);
  copy.set('content-type', 'application/json');
  return copy;
}

/**
 * Reads the body, refusing more than `limit` bytes while reading (a lying or absent
 * Content-Length cannot get past it), and parses it as a UTF-8 JSON object.
 */
async function readJsonBody(request: Request, limit: number): Promise<Record<string, unknown>> {
  const bytes = await readBounded(request, limit);
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
  // Duplicate member names and deep nesting, before JSON.parse would quietly keep the last
  // duplicate or spend its time on a bomb (see jsonStructureProblem).
  const problem = jsonStructureProblem(text);
  if (problem) throw new AppError('invalid_json', `The body is refused: ${problem}.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new AppError('invalid_json', `The body is not valid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new AppError('invalid_json', 'The body must be a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `The body is larger than ${limit} bytes.`, { limitBytes: limit });
}

interface ZodLikeIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
}

/** Maps whatever was thrown to the contract's error. Unexpected errors are logged, never shown. */
function toAppError(err: unknown, requestId: string): AppError {
  const cause = err instanceof TRPCError ? (err.cause ?? err) : err;
  if (cause instanceof AppError) return cause;

  const issues = (cause as { issues?: unknown }).issues;
  if (err instanceof TRPCError && err.code === 'BAD_REQUEST' && Array.isArray(issues)) {
    return fromValidationIssues(issues as ZodLikeIssue[]);
  }
  if (err instanceof TRPCError) {
    switch (err.code) {
      case 'NOT_FOUND':
        return new AppError('not_found', 'No route for this method and path.');
      case 'PARSE_ERROR':
        return new AppError('invalid_json');
      case 'UNSUPPORTED_MEDIA_TYPE':
        return new AppError('unsupported_media_type');
      case 'PAYLOAD_TOO_LARGE':
        return new AppError('payload_too_large');
      default:
        break;
    }
  }
  // The client left mid-body: not the database's doing (its ECONNRESET is the client's socket).
  if (cause instanceof BodyCutOff) return new AppError('invalid_json', cause.message);
  if (isStoreUnavailable(cause)) {
    log('warn', 'store unavailable', { requestId, error: describe(cause) });
    return new AppError('service_unavailable', 'The database is unavailable or busy. Retry shortly.');
  }
  log('error', 'unexpected error', { requestId, error: describe(cause), stack: (cause as Error)?.stack });
  return new AppError('internal_error', 'An unexpected error occurred. Retry with the same Idempotency-Key.');
}

/** Unknown keys win over other issues: the caller sent something this operation does not define. */
function fromValidationIssues(issues: ZodLikeIssue[]): AppError {
  const unknown = issues.filter((i) => i.code === 'unrecognized_keys');
  if (unknown.length > 0) {
    const fields = unknown.flatMap((i) => (i.keys ?? []).map((k) => [...i.path.map(String), k].join('.')));
    return new AppError('unknown_field', `Unknown field${fields.length > 1 ? 's' : ''}: ${fields.join(', ')}.`, { fields });
  }
  const list = issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
  const first = list[0];
  return new AppError('validation_failed', first ? `${first.path || 'body'}: ${first.message}` : 'The request is not valid.', {
    issues: list,
  });
}

async function appUrlOf(opts: RestHandlerOptions): Promise<string> {
  try {
    return (await opts.runtime()).env.APP_URL;
  } catch {
    return 'http://localhost:3000';
  }
}

function errorBody(requestId: string, error: AppError, appUrl: string) {
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

function errorResponse(requestId: string, error: AppError, appUrl: string): Response {
  const body = errorBody(requestId, error, appUrl);
  const headers = new Headers({ ...error.extras.headers, 'Content-Type': 'application/json' });
  // 429 and 503 always; any other error worth retrying (409 idempotency_in_progress) too.
  if (body.error.retryAfter > 0) headers.set('Retry-After', String(body.error.retryAfter));
  if (error.status === 401) headers.set('WWW-Authenticate', 'Bearer realm="api"');
  return new Response(JSON.stringify(body), { status: error.status, headers });
}
