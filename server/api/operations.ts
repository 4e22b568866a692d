/**
 * The REST operations, read once at start from the procedures' OpenAPI meta (the single
 * definition of each operation, which trpc-to-openapi also turns into the document): how a
 * method and path find their procedure, and what its input needs from the query.
 */
import type { AnyProcedure } from '@trpc/server';
import { appRouter } from './root';
import type { Meta } from './trpc';

interface Operation {
  method: string;
  /** The path template, as documented (/decisions/{id}/approve). */
  path: string;
  /** The procedure's path in the router (decisions.approve). */
  procedure: string;
  /** The procedure itself (server/api/call.ts runs it). */
  run: AnyProcedure;
  type: 'query' | 'mutation';
  meta: Meta;
  /** No credential (the public validator's schema, the catalog, the errors page …). */
  isPublic: boolean;
  /** Path parameter names, in order. */
  params: string[];
  /** Query parameters the input takes as arrays (repeatable): one value still becomes a list. */
  arrayParams: Set<string>;
  /** The procedure takes no input at all. */
  noInput: boolean;
  pattern: RegExp;
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

function operationOf(procedurePath: string, procedure: AnyProcedure): Operation | null {
  const def = procedure._def as unknown as { meta?: Meta; type: 'query' | 'mutation'; inputs: ZodLike[] };
  const openapi = def.meta?.openapi;
  if (!openapi || openapi.enabled === false) return null;
  const params = [...openapi.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const shape = def.inputs[0]?._zod?.def.shape ?? {};
  const arrayParams = new Set(Object.keys(shape).filter((k) => kindOf(shape[k]) === 'array'));
  // Routes match without regard to case or a trailing slash (as trpc-to-openapi matched them).
  const source = openapi.path.replace(/\/$/, '').replace(/\{([^}]+)\}/g, (_, name: string) => `(?<${name}>[^/]+)`);
  return {
    method: openapi.method,
    path: openapi.path,
    procedure: procedurePath,
    run: procedure,
    type: def.type,
    meta: def.meta!,
    isPublic: openapi.protect === false,
    params,
    arrayParams,
    noInput: def.inputs.length === 0,
    pattern: new RegExp(`^${source}/?$`, 'i'),
  };
}

export const operations: readonly Operation[] = Object.entries(appRouter._def.procedures as unknown as Record<string, AnyProcedure>)
  .map(([path, procedure]) => operationOf(path, procedure))
  .filter((o): o is Operation => o !== null);

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

/**
 * The query as a procedure's input: a parameter given once is a value, except where the input
 * takes a list (repeatable parameters); one given more often is a list (which a scalar schema then
 * refuses, rather than one of the values being picked silently). Collected without a prototype, so
 * a parameter named like an Object.prototype member (`?constructor=x`) is an unknown field.
 */
export function queryInput(url: URL, arrayParams: ReadonlySet<string>): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    out[key] = values.length === 1 && !arrayParams.has(key) ? values[0] : values;
  }
  return out;
}
