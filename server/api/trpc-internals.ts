/**
 * Every place the service reads or changes what @trpc/server keeps to itself: a router's and a
 * procedure's `_def` (its procedures, type, meta, input and output schemas, middleware steps) and
 * the way its caller runs those steps. tRPC does not promise any of it across versions, so it is
 * all here, and trpc-internals.test.ts checks each fact this file relies on by name: an upgrade of
 * @trpc/server that changes one fails there, not somewhere in a transport.
 *
 * What it is used for: the REST operations table reads each procedure's meta, type and input
 * (operations.ts); procedure builders read their own output schema and meta (procedures.ts); a
 * write's output step is swapped for one that passes a body already checked (mutation.ts); and the
 * REST transport runs a procedure's steps itself (callProcedure, below), faster than tRPC's caller.
 */
import { getTRPCErrorFromUnknown, type AnyProcedure, type AnyRouter, type AnyTRPCProcedure } from '@trpc/server';
import type { ApiContext } from './context';
import type { Meta } from './trpc';

/** A procedure type the service defines (no subscriptions). */
export type ProcedureType = 'query' | 'mutation';

/** What the service reads of a procedure's definition. */
export interface ProcedureFacts {
  type: ProcedureType;
  /** What `.meta()` was given (the OpenAPI meta among it). */
  meta: Meta | undefined;
  /** The schemas given to `.input()`, in order (none: the procedure takes no input). */
  inputs: readonly unknown[];
  /** The schema given to `.output()`. */
  output: unknown;
}

/** A router's procedures by their dotted path (decisions.approve), nested routers flattened. */
export function proceduresOf(router: AnyRouter): Record<string, AnyProcedure> {
  return router._def.procedures as unknown as Record<string, AnyProcedure>;
}

/** The type, meta, inputs and output of `procedure`. */
export function factsOf(procedure: AnyProcedure): ProcedureFacts {
  const def = procedure._def as unknown as { type: ProcedureType; meta?: Meta; inputs: unknown[]; output?: unknown };
  return { type: def.type, meta: def.meta, inputs: def.inputs, output: def.output };
}

/** The meta and output schema a procedure builder holds so far (before `.query()` or `.mutation()`). */
export function builderFacts(builder: { _def: unknown }): { meta: Meta | undefined; output: unknown } {
  const def = builder._def as { meta?: Meta; output?: unknown };
  return { meta: def.meta, output: def.output };
}

/** The error shape a procedure builder's procedures answer with (a type tRPC keeps in its `_def`). */
export type ErrorShapeOf<P extends { _def: { $types: { errorShape: unknown } } }> = P['_def']['$types']['errorShape'];

/** A middleware step's result (tRPC's MiddlewareResult, as the steps pass it on). */
export type StepResult = { ok: true; data: unknown } | { ok: false; error: Error };

/** An output step: it runs the rest of the procedure (`next`) and checks what comes back. */
export type OutputStep = (opts: { next(): Promise<StepResult> }) => Promise<StepResult>;

/**
 * Puts `step` in place of the output step `.output()` made (tRPC builds it from the schema's parse
 * function when `.output()` is called, and marks it `_type: 'output'`); both tRPC's caller and
 * callProcedure read a procedure's steps each time it is called. Throws unless there is exactly one.
 */
export function replaceOutputStep(procedure: AnyTRPCProcedure, step: OutputStep): void {
  const steps = (procedure._def as unknown as { middlewares: { _type?: string }[] }).middlewares;
  const at = steps.findIndex((s) => s._type === 'output');
  if (at < 0 || steps.findIndex((s, i) => i > at && s._type === 'output') >= 0) {
    throw new Error('replaceOutputStep: the procedure must have exactly one output step (one .output()).');
  }
  const marked = step as OutputStep & { _type?: string };
  marked._type = 'output';
  steps[at] = marked;
}

/*
 * The caller. It runs a procedure's middlewares in order, then its resolver, as tRPC's own
 * `callTRPCProcedure` runs them (same options, same results, a throw turned into a failed result
 * the same way), so a procedure behaves alike on /api/v1, on /api/trpc and from a server-side
 * caller.
 *
 * Why not tRPC's: its build copies each step's options and context with a transpiled spread helper
 * that defines every property one at a time (`_objectSpread2`), four to six copies per step and five
 * steps per procedure (error formatter, ours, input, output, resolver). On POST /work that was ~5%
 * of the request's CPU in a profile (npm run bench -- --only writes; docs/contract.md §14); a native
 * spread does the same copy in a fraction of it.
 */

/** What a middleware is given (tRPC's MiddlewareFunction options, as its caller builds them). */
interface StepOptions {
  ctx: object;
  type: ProcedureType;
  path: string;
  input: unknown;
  getRawInput: () => Promise<unknown>;
  meta: unknown;
  signal: AbortSignal | undefined;
  batchIndex: number;
  next(opts?: { ctx?: object; input?: unknown; getRawInput?: () => Promise<unknown> }): Promise<StepResult>;
}

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
  const def = procedure._def as unknown as ProcedureDef & { type: ProcedureType };
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
