/**
 * The REST operations, read once at start: those of the procedures' OpenAPI meta (the single
 * definition of each operation, which trpc-to-openapi also turns into the document) and those the
 * transport serves itself (served-operations.ts). How a method and path find their operation, what
 * its input needs from the query, and who answers it.
 */
import type { AnyProcedure } from '@trpc/server';
import type { z } from 'zod';
import type { AppError } from '@/server/errors';
import type { Answer } from '@/server/http/exchange';
import { appRouter } from './root';
import { servedBeside, servedOperations, type ServeBeside, type ServedOperation } from './served-operations';
import { factsOf, proceduresOf, type ProcedureType } from './trpc-internals';
import type { Meta } from './trpc';

/** The procedure that defines an operation, and what its input takes. */
interface ProcedureOf {
  /** Its path in the router (decisions.approve). */
  path: string;
  /** The procedure itself (trpc-internals.ts, callProcedure, runs it). */
  run: AnyProcedure;
  type: ProcedureType;
  /** Its input schema (path parameters and the body's members, or the query's), when it takes one. */
  input: z.ZodType | undefined;
  /** Query parameters the input takes as arrays (repeatable): one value still becomes a list. */
  arrayParams: Set<string>;
  /** The procedure takes no input at all. */
  noInput: boolean;
}

export interface Operation {
  method: string;
  /** The path template, as documented (/decisions/{id}/approve). */
  path: string;
  meta: Meta;
  /** No credential (the public validator, the catalog, the errors page …). */
  isPublic: boolean;
  /** Path parameter names, in order. */
  params: string[];
  pattern: RegExp;
  /** The procedure that answers, or null for an operation the transport serves alone (`serve`). */
  procedure: ProcedureOf | null;
  /**
   * The transport's own answer (served-operations.ts): the whole answer of an operation no
   * procedure defines, or, beside a procedure, an answer to some of its requests (null: the
   * procedure answers).
   */
  serve: ServeBeside | ServedOperation['serve'] | null;
  /** How a refusal of the per-address limit is answered, when not in the API's envelope. */
  refusal: ((error: AppError) => Answer) | null;
}

/** The shape of a zod object schema, or null (zod 4 keeps the kind in `_zod.def.type`). */
interface ZodLike {
  _zod?: { def: { type: string; innerType?: ZodLike; shape?: Record<string, ZodLike> } };
}

function kindOf(schema: ZodLike | undefined): string | undefined {
  let s = schema;
  // optional(), default(), nullable() wrap the type that matters.
  while (s?._zod && ['optional', 'default', 'prefault', 'nullable'].includes(s._zod.def.type)) s = s._zod.def.innerType;
  return s?._zod?.def.type;
}

function paramsOf(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
}

// Routes match without regard to case or a trailing slash (as trpc-to-openapi matched them).
function patternOf(path: string): RegExp {
  const source = path.replace(/\/$/, '').replace(/\{([^}]+)\}/g, (_, name: string) => `(?<${name}>[^/]+)`);
  return new RegExp(`^${source}/?$`, 'i');
}

function operationOf(procedurePath: string, procedure: AnyProcedure): Operation | null {
  const { meta, type, inputs } = factsOf(procedure);
  const openapi = meta?.openapi;
  if (!meta || !openapi || openapi.enabled === false) return null;
  const input = inputs[0] as (z.ZodType & ZodLike) | undefined;
  const shape = input?._zod?.def.shape ?? {};
  return {
    method: openapi.method,
    path: openapi.path,
    meta,
    isPublic: openapi.protect === false,
    params: paramsOf(openapi.path),
    pattern: patternOf(openapi.path),
    procedure: {
      path: procedurePath,
      run: procedure,
      type,
      input,
      arrayParams: new Set(Object.keys(shape).filter((k) => kindOf(shape[k]) === 'array')),
      noInput: inputs.length === 0,
    },
    serve: servedBeside.get(procedure) ?? null,
    refusal: null,
  };
}

function servedOperationOf(served: ServedOperation): Operation {
  return {
    method: served.method,
    path: served.path,
    meta: {
      openapi: { method: served.method, path: served.path, protect: !served.isPublic },
      ...(served.limitedPerAddress && { limitedPerAddress: true }),
    },
    isPublic: served.isPublic,
    params: paramsOf(served.path),
    pattern: patternOf(served.path),
    procedure: null,
    serve: served.serve,
    refusal: served.refusal,
  };
}

export const operations: readonly Operation[] = [
  ...Object.entries(proceduresOf(appRouter))
    .map(([path, procedure]) => operationOf(path, procedure))
    .filter((o): o is Operation => o !== null),
  ...servedOperations.map(servedOperationOf),
];

export interface Match {
  operation: Operation;
  /** Path parameters, as they stand in the path (ids need no decoding). */
  params: Record<string, string>;
}

/** The operation for a method (HEAD as GET) and a route under /api/v1, or null. */
export function findOperation(method: string, route: string): Match | null {
  const m = method === 'HEAD' ? 'GET' : method;
  for (const operation of operations) {
    if (operation.method !== m) continue;
    const found = operation.pattern.exec(route);
    if (!found) continue;
    const params: Record<string, string> = {};
    for (const name of operation.params) params[name] = found.groups![name]!;
    return { operation, params };
  }
  return null;
}
