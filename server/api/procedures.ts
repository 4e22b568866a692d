/**
 * Procedure builders for the roles: each says once who may call, and in which workspace the
 * procedure acts (locate.ts), and its resolver gets the actor with its input. Mutations also get
 * `write`: the transaction of mutation.ts, whose body is checked against the procedure's own
 * `.output()` schema before COMMIT (there is no other schema to give, and none to forget).
 *
 * The actor is found in the resolver, once the input is read, not by a middleware: the
 * authentication step (trpc.ts) stays the one step before the input's, and a middleware after it
 * would be one more step on every call (see procedureWith there).
 */
import type {
  inferProcedureBuilderResolverOptions,
  TRPCMutationProcedure,
  TRPCProcedureBuilder,
  TRPCQueryProcedure,
  TRPCUnsetMarker,
} from '@trpc/server';
import type { z } from 'zod';
import type { Tx } from '@/db';
import type { Actor } from '@/server/domain/actor';
import type { AppError } from '@/server/errors';
import { callerWorkspace, namedWorkspace, ofResource } from './locate';
import { runBatchedMutation, type BatchOperation } from './batch';
import { checkOutputOnce, runMutation, type OutputCheck } from './mutation';
import { builderFacts, type ErrorShapeOf } from './trpc-internals';
import { apiKeyProcedure, authenticatedProcedure, humanProcedure, OWNERS, type ApiContext, type Meta } from './trpc';

type AnyBuilder = TRPCProcedureBuilder<any, any, any, any, any, any, any, false, any>;
type ContextOf<B extends AnyBuilder> = inferProcedureBuilderResolverOptions<B>['ctx'];
type Unset = TRPCUnsetMarker;
type MaybePromise<T> = T | Promise<T>;
type ErrorShape = ErrorShapeOf<ReturnType<typeof humanProcedure.query<unknown>>>;

/** How a procedure finds who acts: from the caller and the input, the actor (and what it read to find it). */
export type Rule<Ctx, Need, Found extends { actor: Actor }> = (ctx: Ctx, input: Need) => MaybePromise<Found>;

interface WriteOptions<Out> {
  /** See MutationOptions.replay (mutation.ts). */
  replay?: (stored: Out) => Out;
  /** See MutationOptions.acrossWorkspaces (mutation.ts). */
  acrossWorkspaces?: boolean;
}

/**
 * Runs `work` in the write's transaction, as the actor, with the status of the procedure's
 * `successStatus`; its body, checked against the procedure's output schema before COMMIT, is the
 * answer. `later` names fields the resolver adds once the transaction has committed (whether an
 * invitation's email went out): they are left out of that check, and the whole answer is checked
 * on its way out.
 */
export type Write<In, Out> = <K extends keyof In & keyof Out & string = never>(
  work: (tx: Tx) => Promise<Omit<In, K>>,
  opts?: WriteOptions<Out> & { later?: Record<K, true> },
) => Promise<Omit<Out, K>>;

/**
 * Runs one request of `op` in a batch with the operation's concurrent requests to the workspace
 * (batch.ts): the answer as `write` gives it, its body checked against the procedure's output schema.
 */
export type WriteInBatch<Out> = <I>(op: BatchOperation<I>, input: I, opts: { replay: (stored: Out) => Out }) => Promise<Out>;

type Resolved<Ctx, In, Found> = Found & { ctx: Ctx; input: In };
type Answer<OutIn> = OutIn extends Unset ? unknown : OutIn;
type Output<OutOut, R> = OutOut extends Unset ? R : OutOut;
type Built<InIn, Out> = { input: InIn; output: Out; meta: Meta; errorShape: ErrorShape };

/**
 * A tRPC procedure builder whose resolver gets the actor `rule` finds. `.meta()`, `.input()` and
 * `.output()` are tRPC's (the OpenAPI document and the transports read them as they always did).
 */
export class ActingBuilder<Ctx, Need, Found extends { actor: Actor }, InIn = Unset, InOut = Unset, OutIn = Unset, OutOut = Unset> {
  constructor(
    private readonly base: AnyBuilder,
    private readonly rule: Rule<Ctx, Need, Found>,
  ) {}

  meta(meta: Meta): ActingBuilder<Ctx, Need, Found, InIn, InOut, OutIn, OutOut> {
    return new ActingBuilder(this.base.meta(meta), this.rule);
  }

  input<S extends z.ZodType<Need>>(schema: S): ActingBuilder<Ctx, Need, Found, z.input<S>, z.output<S>, OutIn, OutOut> {
    return new ActingBuilder(this.base.input(schema), this.rule);
  }

  output<S extends z.ZodType>(schema: S): ActingBuilder<Ctx, Need, Found, InIn, InOut, z.input<S>, z.output<S>> {
    return new ActingBuilder(this.base.output(schema), this.rule);
  }

  query<R extends Answer<OutIn>>(
    resolve: (opts: Resolved<Ctx, InOut, Found>) => MaybePromise<R>,
  ): TRPCQueryProcedure<Built<InIn, Output<OutOut, R>>> {
    const rule = this.rule;
    return this.base.query(async ({ ctx, input }: { ctx: Ctx; input: Need & InOut }) => {
      const found = rule(ctx, input);
      return resolve({ ...(found instanceof Promise ? await found : found), ctx, input });
    });
  }

  mutation<R extends Answer<OutIn>>(
    resolve: (opts: Resolved<Ctx, InOut, Found> & { write: Write<OutIn, OutOut>; writeInBatch: WriteInBatch<OutOut> }) => MaybePromise<R>,
  ): TRPCMutationProcedure<Built<InIn, Output<OutOut, R>>> {
    const rule = this.rule;
    const def = builderFacts(this.base);
    const schema = def.output as z.ZodType | undefined;
    const status = def.meta?.successStatus ?? 200;
    const procedure = this.base.mutation(async ({ ctx, input }: { ctx: Ctx & ApiContext; input: Need & InOut }) => {
      // Most rules answer at once (the workspace named, an API key's own): no promise to wait for then.
      const pending = rule(ctx, input);
      const found = pending instanceof Promise ? await pending : pending;
      const write = (work: (tx: Tx) => Promise<unknown>, opts: WriteOptions<unknown> & { later?: Record<string, true> } = {}) => {
        if (!schema) throw new Error('write: the procedure has no .output() to check its body against.');
        const { later, ...rest } = opts;
        const output: OutputCheck<unknown> = later ? (schema as unknown as z.ZodObject).omit(later) : schema;
        return runMutation(ctx, found.actor, { status, output, ...rest }, work);
      };
      const writeInBatch = <I>(op: BatchOperation<I>, item: I, opts: { replay: (stored: unknown) => unknown }) => {
        if (!schema) throw new Error('writeInBatch: the procedure has no .output() to check its body against.');
        return runBatchedMutation(ctx, found.actor, { status, output: schema, replay: opts.replay }, op, item);
      };
      return resolve({ ...found, ctx, input, write: write as Write<OutIn, OutOut>, writeInBatch: writeInBatch as WriteInBatch<OutOut> });
    });
    if (schema) checkOutputOnce(procedure, schema);
    return procedure;
  }
}

/** A builder over `base` (its authentication) whose actor `rule` finds. */
export function acting<B extends AnyBuilder, Need, Found extends { actor: Actor }>(
  base: B,
  rule: Rule<ContextOf<B>, Need, Found>,
): ActingBuilder<ContextOf<B>, Need, Found> {
  return new ActingBuilder(base, rule);
}

/** Any member of the workspace the input names (`workspace_id`; default the caller's): outsiders 403. */
export const memberProcedure = acting(authenticatedProcedure, namedWorkspace());
/** Owners and approvers of the workspace the input names: API keys of it too (they act for an owner). */
export const approverProcedure = acting(authenticatedProcedure, namedWorkspace(['owner', 'approver']));
/** Owners of the workspace the input names; API keys of it too. */
export const ownerProcedure = acting(authenticatedProcedure, namedWorkspace(OWNERS));
/** Owners of the caller's own workspace (an operation that names none); API keys of it too. */
export const callerOwnerProcedure = acting(authenticatedProcedure, callerWorkspace(OWNERS));
/** Signed-in members of the workspace the input names; an API key gets 403 human_session_required. */
export const humanMemberProcedure = acting(humanProcedure, namedWorkspace());
/** Signed-in owners of the workspace the input names. */
export const humanOwnerProcedure = acting(humanProcedure, namedWorkspace(OWNERS));
/** Agents: an API key, acting in its workspace. */
export const agentProcedure = acting(apiKeyProcedure, (ctx) => ({ actor: ctx.actor }));

/**
 * Acting on the row of `table` the input's `key` names, in its workspace: anyone outside it (or
 * without one of `roles`, for humans: 403) gets `missing()`, the resource's 404.
 */
export const resourceProcedure = <K extends string>(
  table: Parameters<typeof ofResource<K>>[0],
  key: K,
  missing: () => AppError,
  roles?: Parameters<typeof ofResource<K>>[3],
) => acting(authenticatedProcedure, ofResource(table, key, missing, roles));
