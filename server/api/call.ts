/**
 * Calling a procedure for the REST transport: its middlewares in order, then its resolver, as
 * tRPC's own `callTRPCProcedure` runs them (same options, same results, a throw turned into a
 * failed result the same way), so a procedure behaves alike on /api/v1, on /api/trpc and from a
 * server-side caller.
 *
 * Why not tRPC's: its build copies each step's options and context with a transpiled spread helper
 * that defines every property one at a time (`_objectSpread2`), four to six copies per step and five
 * steps per procedure (error formatter, ours, input, output, resolver). On POST /work that was ~5%
 * of the request's CPU in a profile (npm run bench -- --only writes; docs/contract.md §14); a native spread
 * does the same copy in a fraction of it.
 */
import { getTRPCErrorFromUnknown, type AnyProcedure } from '@trpc/server';
import type { ApiContext } from './context';

/** What a middleware is given (tRPC's MiddlewareFunction options, as its caller builds them). */
interface StepOptions {
  ctx: object;
  type: 'query' | 'mutation';
  path: string;
  input: unknown;
  getRawInput: () => Promise<unknown>;
  meta: unknown;
  signal: AbortSignal | undefined;
  batchIndex: number;
  next(opts?: { ctx?: object; input?: unknown; getRawInput?: () => Promise<unknown> }): Promise<StepResult>;
}

type StepResult = { ok: true; data: unknown } | { ok: false; error: Error };
type Step = (opts: StepOptions) => Promise<StepResult>;

interface ProcedureDef {
  middlewares: Step[];
  meta: unknown;
}

type CallState = Omit<StepOptions, 'meta' | 'next'>;

/** A throw or rejection of a step, as tRPC's caller turns it into a failed result. */
const failed = (cause: unknown): StepResult => ({ ok: false, error: getTRPCErrorFromUnknown(cause) });

// Not an async function: a step's promise is its middleware's, with one `catch` (each step of an
// async walk cost two more promises and their microtask turns).
function step(def: ProcedureDef, index: number, state: CallState): Promise<StepResult> {
  try {
    const middleware = def.middlewares[index]!;
    return Promise.resolve(
      middleware({
        ...state,
        meta: def.meta,
        next(nextOpts) {
          return step(def, index + 1, {
            ...state,
            ctx: nextOpts?.ctx ? { ...state.ctx, ...nextOpts.ctx } : state.ctx,
            input: nextOpts && 'input' in nextOpts ? nextOpts.input : state.input,
            getRawInput: nextOpts?.getRawInput ?? state.getRawInput,
          });
        },
      }),
    ).catch(failed);
  } catch (cause) {
    return Promise.resolve(failed(cause));
  }
}

/** Runs `procedure` (at `path` in the router) with `ctx` and the raw `input`; throws its error as tRPC would. */
export async function callProcedure(procedure: AnyProcedure, path: string, ctx: ApiContext, input: unknown): Promise<unknown> {
  const def = procedure._def as unknown as ProcedureDef & { type: 'query' | 'mutation' };
  const result = await step(def, 0, {
    ctx,
    type: def.type,
    path,
    input: undefined,
    getRawInput: () => Promise.resolve(input),
    signal: undefined,
    batchIndex: 0,
  });
  if (!result.ok) throw result.error;
  return result.data;
}
