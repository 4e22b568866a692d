/**
 * What trpc-internals.ts relies on in @trpc/server, each fact by name, on a router of its own: a
 * router's procedures by dotted path; a procedure's type, meta, input and output schemas; a
 * builder's meta and output; the output step `.output()` adds and that both callers run; the
 * options a middleware is given; and callProcedure (the REST transport's caller) against tRPC's own
 * callTRPCProcedure, the same results and errors either way. An upgrade that changes any of them
 * fails here.
 */
import { callTRPCProcedure, initTRPC, TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApiContext } from './context';
import { builderFacts, callProcedure, factsOf, proceduresOf, replaceOutputStep, type StepResult } from './trpc-internals';
import type { Meta } from './trpc';

const t = initTRPC.context<{ base: string }>().create();
const withUser = t.procedure.use(({ ctx, next }) => next({ ctx: { user: `${ctx.base}:user` } }));
const refusing = t.procedure.use(() => {
  throw new Error('refused in a middleware');
});
const router = t.router({
  greet: withUser
    .input(z.strictObject({ name: z.string().min(1) }))
    .output(z.object({ text: z.string() }))
    .mutation(({ ctx, input }) => ({ text: `${ctx.base}/${ctx.user} greets ${input.name}` })),
  badOutput: withUser.output(z.object({ n: z.number() })).query(() => ({ n: 'not a number' }) as never),
  refused: refusing.query(() => 'never'),
  throwsTyped: t.procedure.query(() => {
    throw new TRPCError({ code: 'CONFLICT', message: 'taken' });
  }),
});

type Outcome = { ok: true; data: unknown } | { ok: false; error: { name: string; code: string; message: string; cause?: string } };

async function settle(call: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, data: await call() };
  } catch (err) {
    const e = err as TRPCError;
    return { ok: false, error: { name: e.name, code: e.code, message: e.message, cause: e.cause?.message } };
  }
}

async function both(path: 'greet' | 'badOutput' | 'refused' | 'throwsTyped', input: unknown) {
  const procedure = proceduresOf(router)[path]!;
  const type = factsOf(procedure).type;
  const ctx = { base: 'ctx' };
  const ours = await settle(() => callProcedure(procedure, path, ctx as unknown as ApiContext, input));
  const theirs = await settle(() =>
    callTRPCProcedure({ router, path, type, ctx, getRawInput: async () => input, signal: undefined, batchIndex: 0 }),
  );
  return { ours, theirs };
}

describe('callProcedure', () => {
  it('runs the middlewares with the context they extend, then the resolver, as tRPC does', async () => {
    const { ours, theirs } = await both('greet', { name: 'Ada' });
    expect(ours).toEqual({ ok: true, data: { text: 'ctx/ctx:user greets Ada' } });
    expect(ours).toEqual(theirs);
  });

  it('fails an input its schema refuses with BAD_REQUEST and the schema’s issues, as tRPC does', async () => {
    const { ours, theirs } = await both('greet', { name: '', extra: 1 });
    expect(ours.ok).toBe(false);
    expect(ours).toEqual(theirs);
    if (!ours.ok) expect(ours.error.code).toBe('BAD_REQUEST');
  });

  it('fails an output its schema refuses, and a throw in a middleware or resolver, as tRPC does', async () => {
    for (const path of ['badOutput', 'refused', 'throwsTyped'] as const) {
      const { ours, theirs } = await both(path, undefined);
      expect(ours.ok, path).toBe(false);
      expect(ours, path).toEqual(theirs);
    }
  });
});

const tm = initTRPC.context<{ base: string }>().meta<Meta>().create();
const metaGiven: Meta = { openapi: { method: 'POST', path: '/things/{id}' }, successStatus: 201 };
const inputGiven = z.strictObject({ id: z.string(), n: z.number().optional() });
const outputGiven = z.object({ id: z.string() });
const built = tm.procedure.meta(metaGiven).input(inputGiven).output(outputGiven);
const nested = tm.router({
  things: tm.router({ make: built.mutation(({ input }) => ({ id: input.id })), read: tm.procedure.query(() => 'plain') }),
  top: tm.procedure.input(z.object({ a: z.string() })).query(({ input }) => input.a),
});

describe('the facts trpc-internals.ts reads', () => {
  it('a router lists its procedures by dotted path, nested routers flattened, each the procedure itself', () => {
    const procedures = proceduresOf(nested);
    expect(Object.keys(procedures).sort()).toEqual(['things.make', 'things.read', 'top']);
    expect(procedures['things.make']).toBe(nested.things.make);
  });

  it('a procedure keeps its type, the meta, the input schemas and the output schema it was given', () => {
    const make = factsOf(proceduresOf(nested)['things.make']!);
    expect(make.type).toBe('mutation');
    expect(make.meta).toBe(metaGiven);
    expect(make.inputs).toHaveLength(1);
    expect(make.inputs[0]).toBe(inputGiven);
    expect(make.output).toBe(outputGiven);
    const read = factsOf(proceduresOf(nested)['things.read']!);
    expect(read).toEqual({ type: 'query', meta: undefined, inputs: [], output: undefined });
  });

  it('a builder holds its meta and output schema before .query() or .mutation()', () => {
    expect(builderFacts(built)).toEqual({ meta: metaGiven, output: outputGiven });
    expect(builderFacts(tm.procedure)).toEqual({ meta: undefined, output: undefined });
  });

  it('the output step .output() adds is the one both callers run, and it can be replaced', async () => {
    const t2 = initTRPC.context<{ base: string }>().create();
    const schema = z.object({ n: z.number() });
    const procedure = t2.procedure.output(schema).query(() => ({ n: 'not a number' }) as never);
    const r = t2.router({ p: procedure });
    const theirs = () => t2.createCallerFactory(r)({ base: 'b' }).p();
    // As built, tRPC's output step refuses the body.
    await expect(theirs()).rejects.toMatchObject({ code: 'INTERNAL_SERVER_ERROR', message: 'Output validation failed' });
    const seen: unknown[] = [];
    replaceOutputStep(procedure, async ({ next }) => {
      const result: StepResult = await next();
      if (result.ok) seen.push(result.data);
      return result;
    });
    await expect(theirs()).resolves.toEqual({ n: 'not a number' });
    await expect(callProcedure(procedure, 'p', { base: 'b' } as unknown as ApiContext, undefined)).resolves.toEqual({ n: 'not a number' });
    expect(seen).toEqual([{ n: 'not a number' }, { n: 'not a number' }]);
  });

  it('replacing the output step asks for exactly one', () => {
    const t2 = initTRPC.create();
    const step = ({ next }: { next(): Promise<StepResult> }) => next();
    expect(() =>
      replaceOutputStep(
        t2.procedure.query(() => 1),
        step,
      ),
    ).toThrow(/exactly one output step/);
    // tRPC itself refuses a second .output() (so a second output step cannot be built).
    expect(() => t2.procedure.output(z.number()).output(z.number())).toThrow(/Duplicate key output/);
  });

  it('a middleware is given the same options by tRPC’s caller and by callProcedure', async () => {
    const t2 = initTRPC.context<{ base: string }>().meta<Meta>().create();
    const given: Record<string, unknown>[] = [];
    const procedure = t2.procedure
      .meta(metaGiven)
      .use(async (opts) => {
        const { next, getRawInput, ...rest } = opts;
        given.push({ ...rest, next: typeof next, rawInput: await getRawInput() });
        return next({ ctx: { extra: 1 } });
      })
      .input(z.object({ a: z.string() }))
      .query(({ ctx, input }) => ({ ctx, input }));
    const r = t2.router({ q: procedure });
    const theirs = await callTRPCProcedure({
      router: r,
      path: 'q',
      type: 'query',
      ctx: { base: 'b' },
      getRawInput: async () => ({ a: 'x' }),
      signal: undefined,
      batchIndex: 0,
    });
    const ours = await callProcedure(procedure, 'q', { base: 'b' } as unknown as ApiContext, { a: 'x' });
    expect(ours).toEqual(theirs);
    expect(ours).toEqual({ ctx: { base: 'b', extra: 1 }, input: { a: 'x' } });
    expect(given).toHaveLength(2);
    // callTRPCProcedure hands its own options on, the router among them; no middleware here reads it.
    const { router: _router, ...theirsGiven } = given[0]!;
    expect(Object.keys(given[1]!).sort()).toEqual(Object.keys(theirsGiven).sort());
    expect(given[1]).toEqual(theirsGiven);
    expect(given[0]).toMatchObject({ ctx: { base: 'b' }, type: 'query', path: 'q', meta: metaGiven, rawInput: { a: 'x' }, batchIndex: 0 });
  });
});
