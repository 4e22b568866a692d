/**
 * tRPC setup: the request context, the procedure metadata, and the procedures routers build on
 * (public, and authenticated by API key). Authentication runs before the input's field rules, so
 * an unauthenticated caller learns nothing about them (the body's form is checked earlier, by the
 * transport, as it reads the body).
 */
import { initTRPC } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { Actor } from '@/server/domain/actor';
import { EMPTY_CONTEXT_MANIFEST_DIGEST } from '@/server/domain/actor';
import { authenticateApiKey } from '@/server/auth/api-keys';
import { AppError, type ErrorCode } from '@/server/errors';
import type { Runtime } from '@/server/runtime';
import { IDEMPOTENCY_KEY_PATTERN, mutationHeaders } from './schemas';

export interface ResponseInit {
  status: number | undefined;
  headers: Record<string, string>;
}

export interface ApiContext {
  runtime: Runtime;
  requestId: string;
  method: string;
  /** The request path (e.g. /api/v1/work), without query. */
  path: string;
  headers: Headers;
  /** The parsed JSON body (an object) of a POST, exactly as sent; undefined for GET. */
  body: unknown;
  /** Status and headers the procedure wants on its success response. */
  res: ResponseInit;
}

// A type alias (not an interface) so it satisfies tRPC's Record<string, unknown> meta constraint.
export type OperationMeta = {
  /** Success status (default 200). */
  successStatus?: number;
  /** Codes this operation can answer with beyond those every operation of its kind can (auth, body, 500, 503). */
  errorCodes?: ErrorCode[];
  /** Other success statuses and what they mean (e.g. 200 for an idempotent replay of a 201). */
  otherSuccess?: Record<number, string>;
  /** Credentials the operation accepts, as OpenAPI security scheme names (default: the API key). */
  auth?: ('ApiKey' | 'Session')[];
};

export type Meta = OpenApiMeta<OperationMeta>;

const t = initTRPC.context<ApiContext>().meta<Meta>().create({
  // Internal tRPC callers (the UI) get the contract's code too.
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    return {
      ...shape,
      data: { ...shape.data, stack: undefined, appCode: cause instanceof AppError ? cause.code : undefined },
    };
  },
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure;

function bearerToken(header: string | null): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** Requires `Authorization: Bearer <API key>` and puts the acting key on the context. */
export const apiKeyProcedure = t.procedure.use(async ({ ctx, next, type }) => {
  const token = bearerToken(ctx.headers.get('authorization'));
  if (!token) throw new AppError('unauthorized', 'Send Authorization: Bearer <API key>.');
  const principal = await authenticateApiKey(ctx.runtime.db, token);
  if (!principal) throw new AppError('unauthorized', 'The API key is unknown or revoked.');

  const idempotencyKey = type === 'mutation' ? ctx.headers.get('idempotency-key') : null;
  if (idempotencyKey !== null && !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
    throw new AppError('invalid_idempotency_key', 'Idempotency-Key must match ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$.');
  }
  // The same schema the OpenAPI document shows for these headers.
  const correlationId = ctx.headers.get('x-correlation-id');
  const manifest = ctx.headers.get('x-context-manifest-digest');
  const headers = traceHeaders.safeParse({
    'x-correlation-id': correlationId ?? undefined,
    'x-context-manifest-digest': manifest ?? undefined,
  });
  if (!headers.success) {
    const issues = headers.error.issues.map((i) => ({ path: `headers.${i.path.join('.')}`, message: i.message }));
    throw new AppError('validation_failed', 'Invalid request headers.', { issues });
  }

  const actor: Actor = {
    type: 'api_key',
    id: principal.keyId,
    ownerId: principal.ownerUserId,
    workspaceId: principal.workspaceId,
    trace: {
      requestId: ctx.requestId,
      correlationId: correlationId?.toLowerCase() ?? ctx.requestId,
      idempotencyKey,
      contextManifestDigest: manifest ?? EMPTY_CONTEXT_MANIFEST_DIGEST,
    },
  };
  return next({ ctx: { actor } });
});

const traceHeaders = mutationHeaders.pick({ 'x-correlation-id': true, 'x-context-manifest-digest': true });

export type AuthedContext = ApiContext & { actor: Actor };
