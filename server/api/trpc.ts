/**
 * tRPC setup: the request context, the procedure metadata, and the procedures routers build on.
 *
 * Callers are agents with an API key (`Authorization: Bearer`, bound to one workspace) or humans
 * with a next-auth session cookie (members of one or more workspaces, each with a role). Which
 * workspace a human acts in is decided by the resource (a decision's workspace) or the input
 * (`workspace_id`), through `actorIn`: the role builders of procedures.ts call it, once the input is
 * read. Authentication runs before the input's field rules, so an unauthenticated caller learns
 * nothing about them (the body's form is checked earlier, by the transport, as it reads the body).
 */
import { initTRPC, TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { MembershipRole } from '@/db/schema';
import { hasSessionCookie, readSessionUser, type SessionUser } from '@/server/auth/session';
import { EMPTY_CONTEXT_MANIFEST_DIGEST, type Actor, type Trace } from '@/server/domain/actor';
import { AppError, type ErrorCode } from '@/server/errors';
import { isAppOrigin } from '@/server/http/origin';
import { countRefusal } from '@/server/metrics';
import { hit, isExceeded, rateLimitedError } from '@/server/rate-limits';
import { IDEMPOTENCY_KEY_PATTERN, mutationHeaders } from './schemas';
import { bearerToken, presentKey, requireKey } from './api-key-auth';
import type { ApiContext } from './context';
import { fromValidationIssues, hasIssues } from './validation-issues';

export type { ApiContext } from './context';

// A type alias (not an interface) so it satisfies tRPC's Record<string, unknown> meta constraint.
type OperationMeta = {
  /** Success status (default 200). */
  successStatus?: number;
  /** Codes this operation can answer with beyond those every operation of its kind can (auth, body, 500, 503). */
  errorCodes?: ErrorCode[];
  /** Other success statuses and what they mean (e.g. 200 for an idempotent replay of a 201). */
  otherSuccess?: Record<number, string>;
  /** Headers of the success response, with their meaning (documented). */
  successHeaders?: Record<string, string>;
  /** Credentials the operation accepts, as OpenAPI security scheme names (default: the API key). */
  auth?: ('ApiKey' | 'Session')[];
  /** The largest body the operation reads, when it is not API_BODY_LIMIT_BYTES (POST /artifacts: base64 content). */
  bodyLimitBytes?: number;
  /** The success answer is bytes of their own media type, not JSON: what they are (documented). */
  rawContent?: string;
  /**
   * Counted per client address in the public validator's limit (RATE_LIMIT_VALIDATOR_PER_MIN),
   * before anything else of the request is read: the validator's operations, which take no credential.
   */
  limitedPerAddress?: true;
};

export type Meta = OpenApiMeta<OperationMeta>;

const t = initTRPC
  .context<ApiContext>()
  .meta<Meta>()
  .create({
    // Internal tRPC callers (the UI) get the contract's code too, and never a stack.
    // An input the schema refused reads as REST's does (a sentence, details.issues), not zod's dump.
    errorFormatter({ shape, error }) {
      const cause = error.code === 'BAD_REQUEST' && hasIssues(error.cause) ? fromValidationIssues(error.cause.issues) : error.cause;
      const { stack: _stack, ...data } = shape.data;
      return {
        ...shape,
        message: cause instanceof AppError ? cause.message : error.code === 'INTERNAL_SERVER_ERROR' ? 'Internal error' : shape.message,
        data: {
          ...data,
          appCode: cause instanceof AppError ? cause.code : undefined,
          ...(cause instanceof AppError && Object.keys(cause.details).length > 0 ? { details: cause.details } : {}),
        },
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

const TRPC_CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

/** For the interface's endpoint: a domain error as the tRPC error of its HTTP status, the AppError kept as cause. */
function internalError(cause: AppError): TRPCError {
  return new TRPCError({ code: TRPC_CODE_BY_STATUS[cause.status] ?? 'INTERNAL_SERVER_ERROR', message: cause.message, cause });
}

/**
 * A procedure whose context is extended by `resolve` (who the caller is, and so on), in one
 * middleware step: tRPC copies the options and the context at every step, and on POST /work
 * three steps of it were ~5% of the request's CPU.
 *
 * For the interface's endpoint, domain errors become tRPC errors of the matching HTTP status (tRPC
 * would call any other throw a 500), keeping the AppError as the cause: the error formatter reads
 * it there. REST reads the AppError from the cause of whatever tRPC throws (server/api/rest.ts,
 * toAppError), so its errors pass as they are.
 */
function procedureWith<Extra extends object>(resolve: (ctx: ApiContext, type: string) => Extra | Promise<Extra>) {
  return t.procedure.use(async ({ ctx, type, next }) => {
    if (ctx.transport === 'rest') return next({ ctx: await resolve(ctx, type) });
    let extra: Extra;
    try {
      extra = await resolve(ctx, type);
    } catch (err) {
      throw err instanceof AppError ? internalError(err) : err;
    }
    const result = await next({ ctx: extra });
    if (!result.ok && result.error.code === 'INTERNAL_SERVER_ERROR' && result.error.cause instanceof AppError) {
      return { ...result, error: internalError(result.error.cause) };
    }
    return result;
  });
}

/**
 * No credential needed (health, the document, the error table; on the interface's endpoint, the
 * link pages' reads and the writes that spend a link). A write there from a browser must still
 * come from the app's own pages: it counts an attempt against the client's address, and another
 * site's form must not spend that for someone who merely visits it. Clients that are not browsers
 * send neither Origin nor Sec-Fetch-Site and are let through.
 */
export const publicProcedure = procedureWith((ctx, type) => {
  if (type === 'mutation' && ctx.transport === 'internal') {
    const origin = ctx.headers.get('origin');
    const site = ctx.headers.get('sec-fetch-site');
    if (origin !== null ? !isAppOrigin(origin, ctx.runtime.env.APP_URL) : site !== null && site !== 'same-origin' && site !== 'none') {
      throw crossSiteRefused();
    }
  }
  return {};
});

export type Principal = { kind: 'api_key'; keyId: string; workspaceId: string; ownerUserId: string } | ({ kind: 'human' } & SessionUser);

/** The context of a procedure once its caller is authenticated. */
export type AuthedContext = ApiContext & { principal: Principal; trace: Trace };

/** The role that manages a workspace (its people, keys and webhooks) and changes its runs and nodes. */
export const OWNERS = ['owner'] as const;

const traceHeaders = mutationHeaders.pick({ 'x-correlation-id': true, 'x-context-manifest-digest': true });

function traceOf(ctx: ApiContext, type: string): Trace {
  // Idempotency keys are part of the REST contract; the interface's endpoint does not offer them.
  const idempotencyKey = type === 'mutation' && ctx.transport === 'rest' ? ctx.headers.get('idempotency-key') : null;
  if (idempotencyKey !== null && !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
    throw new AppError('invalid_idempotency_key', 'Idempotency-Key must match ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$.');
  }
  // The same schema the OpenAPI document shows for these headers.
  const correlationId = ctx.headers.get('x-correlation-id');
  const manifest = ctx.headers.get('x-context-manifest-digest');
  const headers =
    correlationId === null && manifest === null
      ? { success: true as const }
      : traceHeaders.safeParse({ 'x-correlation-id': correlationId ?? undefined, 'x-context-manifest-digest': manifest ?? undefined });
  if (!headers.success) {
    const issues = headers.error.issues.map((i) => ({ path: `header.${i.path.join('.')}`, message: i.message }));
    throw new AppError('validation_failed', 'Invalid request headers.', { issues });
  }
  return {
    requestId: ctx.requestId,
    correlationId: correlationId?.toLowerCase() ?? ctx.requestId,
    idempotencyKey,
    contextManifestDigest: manifest ?? EMPTY_CONTEXT_MANIFEST_DIGEST,
  };
}

/**
 * A cookie-authenticated write must come from the app's own pages: the browser's Origin must be
 * one of the origins APP_URL names (server/http/origin.ts), never one the request's Host claims;
 * without Origin, Sec-Fetch-Site must say same-origin. API keys are not sent by browsers on their
 * own, so they need no such check.
 */
function assertSameOrigin(ctx: ApiContext): void {
  const origin = ctx.headers.get('origin');
  if (origin !== null ? isAppOrigin(origin, ctx.runtime.env.APP_URL) : ctx.headers.get('sec-fetch-site') === 'same-origin') return;
  throw crossSiteRefused();
}

const crossSiteRefused = () => new AppError('forbidden', 'Changes must come from the app’s own pages (cross-site request refused).');

/** The caller and the trace of their request (its headers checked). */
async function authenticate(ctx: ApiContext, type: string): Promise<{ principal: Principal; trace: Trace }> {
  return { principal: await principalOf(ctx, type), trace: traceOf(ctx, type) };
}

/**
 * Resolves the caller: an API key when one is presented, else a session cookie; 401 without either.
 * The SSE lease of the events (server/api/event-stream.ts) authenticates here too, as events.list does.
 */
export async function principalOf(ctx: ApiContext, type: string): Promise<Principal> {
  const { runtime } = ctx;
  const authorization = ctx.headers.get('authorization');
  if (ctx.transport === 'internal' && authorization !== null) {
    throw new AppError('unauthorized', 'API keys are accepted at /api/v1 only; this endpoint serves the signed-in web interface.');
  }
  let principal: Principal | null = null;
  if (bearerToken(authorization)) {
    const key = requireKey(ctx.presentedKey !== undefined ? ctx.presentedKey : await presentKey(runtime, authorization));
    principal = { kind: 'api_key', keyId: key.keyId, workspaceId: key.workspaceId, ownerUserId: key.ownerUserId };
  } else if (authorization !== null) {
    throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>.');
  } else if (hasSessionCookie(ctx.headers, runtime.env.APP_URL)) {
    const user = await readSessionUser(runtime.db, ctx.headers, runtime.secrets.auth, runtime.env.APP_URL);
    if (!user) throw new AppError('unauthorized', 'The session has expired. Sign in again.');
    if (type === 'mutation') {
      assertSameOrigin(ctx);
      await limitSessionWrites(ctx, user.userId);
    }
    principal = { kind: 'human', ...user };
  }
  if (!principal) throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>, or sign in.');
  ctx.caller = principal.kind === 'api_key' ? { keyId: principal.keyId, workspaceId: principal.workspaceId } : { userId: principal.userId };
  return principal;
}

/**
 * Counts a signed-in person's write against RATE_LIMIT_SESSION_WRITES_PER_MIN: 429 past it. Counted
 * per person, across all their sessions, so signing in again buys no new budget (API keys have
 * their own limit, counted as they are resolved).
 */
async function limitSessionWrites(ctx: ApiContext, userId: string): Promise<void> {
  const now = new Date();
  const usage = await hit(ctx.runtime.db, `session_writes:${userId}`, ctx.runtime.env.RATE_LIMIT_SESSION_WRITES_PER_MIN, now);
  if (!isExceeded(usage)) return;
  countRefusal('session_rate_limit');
  throw rateLimitedError(usage, now, 'from your session (changes)');
}

export interface ActorOptions {
  /**
   * When the caller is not a member of the workspace: `forbidden` (a workspace named in the input),
   * or, when the workspace is a resource's, the very error a missing resource gets, so that an id
   * of another workspace cannot be told from one that does not exist (OWASP API1).
   */
  outsider: 'forbidden' | (() => AppError);
  /** Roles allowed to act (humans only); others get 403. */
  roles?: readonly MembershipRole[];
}

/** Whether `principal` is inside `workspaceId`: the key's own, or one the human is a member of. */
export function belongsTo(principal: Principal, workspaceId: string): boolean {
  return principal.kind === 'api_key'
    ? principal.workspaceId === workspaceId
    : principal.memberships.some((m) => m.workspaceId === workspaceId);
}

/** The actor for `principal` acting in `workspaceId`, or the error an outsider gets. */
export function actorIn(principal: Principal, trace: Trace, workspaceId: string, opts: ActorOptions): Actor {
  if (principal.kind === 'api_key') {
    if (principal.workspaceId !== workspaceId) {
      throw opts.outsider === 'forbidden' ? new AppError('forbidden', 'This API key belongs to another workspace.') : opts.outsider();
    }
    return { type: 'api_key', id: principal.keyId, ownerId: principal.ownerUserId, workspaceId, trace };
  }
  const membership = principal.memberships.find((m) => m.workspaceId === workspaceId);
  if (!membership) {
    throw opts.outsider === 'forbidden' ? new AppError('forbidden', 'You are not a member of that workspace.') : opts.outsider();
  }
  if (opts.roles && !opts.roles.includes(membership.role)) {
    throw new AppError('forbidden', `Your role in this workspace (${membership.role}) cannot do this.`);
  }
  return { type: 'human', id: principal.userId, ownerId: principal.userId, workspaceId, role: membership.role, trace };
}

/** The workspace a caller means when none is named: the key's, or the human's first membership. */
export function defaultWorkspace(principal: Principal): string {
  if (principal.kind === 'api_key') return principal.workspaceId;
  const first = principal.memberships[0];
  if (!first) throw new AppError('forbidden', 'You are not a member of any workspace.');
  return first.workspaceId;
}

/**
 * Any authenticated caller, in no workspace yet: the role builders (procedures.ts) decide which one
 * from the input, and operations that concern no workspace (the artifact catalog) use it as is.
 */
export const authenticatedProcedure = procedureWith(authenticate);

/** Agents only: an API key, whose workspace is the actor's. */
export const apiKeyProcedure = procedureWith(async (ctx, type) => {
  const { principal, trace } = await authenticate(ctx, type);
  if (principal.kind !== 'api_key') throw new AppError('unauthorized', 'This operation needs an API key (Authorization: Bearer).');
  // The key's own workspace: it is always inside.
  const actor = actorIn(principal, trace, principal.workspaceId, { outsider: 'forbidden' });
  return { principal, trace, actor };
});

/** Signed-in humans only: an API key gets 403 human_session_required. */
export const humanProcedure = procedureWith(async (ctx, type) => {
  const { principal, trace } = await authenticate(ctx, type);
  if (principal.kind !== 'human') {
    throw new AppError('human_session_required', 'Only a signed-in human can do this; send them to resolve_url.');
  }
  return { principal, trace };
});
