/**
 * callProcedure (the REST transport's caller) against tRPC's own callTRPCProcedure: the same
 * procedures give the same results and the same errors either way.
 */
import { callTRPCProcedure, initTRPC, TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callProcedure } from './call';
import type { ApiContext } from './context';

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

async function both(path: keyof typeof router._def.procedures, input: unknown) {
  const procedure = router._def.procedures[path] as never;
  const type = (router._def.procedures[path] as { _def: { type: 'query' | 'mutation' } })._def.type;
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
