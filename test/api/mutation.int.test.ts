/**
 * The write of a procedure built by the role builders (server/api/procedures.ts, mutation.ts): its
 * body is checked against the procedure's own output schema once, inside the transaction, and the
 * output step passes that body through as it is; anything else the procedure answers (a replay, an
 * answer completed after COMMIT) is checked by the output step; a body that fails the check
 * before COMMIT leaves nothing behind.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { instanceSecrets } from '@/db/schema';
import { createApiContext } from '@/server/api/context';
import { acting } from '@/server/api/procedures';
import { createCallerFactory, publicProcedure, router } from '@/server/api/trpc';
import { systemTrace, type Actor } from '@/server/domain/actor';
import { nodeHeaders } from '@/server/http/exchange';
import { startTestApp, type TestApp } from '../support/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** A schema that counts how often a value is checked against it. */
function counted() {
  const state = { checks: 0 };
  const schema = z.object({ data: z.object({ n: z.number() }), note: z.string().optional() }).refine(() => ++state.checks > 0);
  return { schema, state };
}

function callerOf(procedures: Parameters<typeof router>[0], headers: Record<string, string> = {}) {
  const ctx = createApiContext(app.runtime, {
    transport: 'rest',
    method: 'POST',
    url: new URL('http://127.0.0.1:3000/api/v1/test'),
    headers: nodeHeaders(headers),
    body: {},
  });
  return { ctx, call: createCallerFactory(router(procedures))(ctx) as unknown as Record<string, () => Promise<unknown>> };
}

const actor = (idempotencyKey: string | null = null): Actor => ({
  type: 'system',
  id: 'system:test',
  ownerId: app.ws.ownerUserId,
  workspaceId: app.ws.workspaceId,
  trace: { ...systemTrace(randomUUID()), idempotencyKey },
});

/** Acting as a system actor of the test workspace, with no credential. */
const asSystem = (idempotencyKey: string | null = null) => acting(publicProcedure, () => ({ actor: actor(idempotencyKey) }));

const secretNamed = (name: string) => app.runtime.db.select().from(instanceSecrets).where(eq(instanceSecrets.name, name));

describe('write', () => {
  it('checks the body once, in the transaction, and the procedure answers that very body', async () => {
    const { schema, state } = counted();
    const { ctx, call } = callerOf({
      once: asSystem()
        .meta({ successStatus: 201 })
        .output(schema)
        .mutation(({ write }) => write(async () => ({ data: { n: 1 } }))),
    });
    expect(await call.once!()).toEqual({ data: { n: 1 } });
    expect(state.checks).toBe(1);
    // The status is the procedure's successStatus.
    expect(ctx.res.status).toBe(201);
  });

  it('checks an answer the resolver made without write, once', async () => {
    const { schema, state } = counted();
    const { call } = callerOf({
      direct: asSystem()
        .output(schema)
        .mutation(() => ({ data: { n: 2 } })),
      wrong: asSystem()
        .output(schema)
        .mutation(() => ({ data: { n: 'two' } }) as never),
    });
    expect(await call.direct!()).toEqual({ data: { n: 2 } });
    expect(state.checks).toBe(1);
    await expect(call.wrong!()).rejects.toThrow('Output validation failed');
  });

  it('a body its schema refuses rolls the writes back', async () => {
    const { schema } = counted();
    const name = `test-rollback-${randomUUID()}`;
    const { call } = callerOf({
      bad: asSystem()
        .output(schema)
        .mutation(({ write }) =>
          write(async (tx) => {
            await tx.insert(instanceSecrets).values({ name, value: 'x' });
            return { data: { n: 'not a number' } } as never;
          }),
        ),
    });
    await expect(call.bad!()).rejects.toThrow();
    expect(await secretNamed(name)).toHaveLength(0);
  });

  it('a replay is checked by the output step, as the replay shows it', async () => {
    const { schema, state } = counted();
    const key = `k-${randomUUID()}`;
    const name = `test-replay-${randomUUID()}`;
    const procedure = asSystem(key)
      .meta({ successStatus: 201 })
      .output(schema)
      .mutation(({ write }) =>
        write(
          async (tx) => {
            await tx.insert(instanceSecrets).values({ name, value: 'x' });
            return { data: { n: 3 } };
          },
          { replay: (stored) => ({ ...stored, note: 'replayed' }) },
        ),
      );
    const first = callerOf({ write: procedure }, { 'idempotency-key': key });
    expect(await first.call.write!()).toEqual({ data: { n: 3 } });
    expect(state.checks).toBe(1);
    const again = callerOf({ write: procedure }, { 'idempotency-key': key });
    expect(await again.call.write!()).toEqual({ data: { n: 3 }, note: 'replayed' });
    expect(again.ctx.res.status).toBe(200);
    expect(state.checks).toBe(2);
    expect(await secretNamed(name)).toHaveLength(1);
  });

  it('`later` fields: the rest is checked before COMMIT, the whole answer on its way out', async () => {
    const schema = z.object({ made: z.string(), sent: z.boolean() });
    const refused = `test-later-${randomUUID()}`;
    const kept = `test-later-${randomUUID()}`;
    const { call } = callerOf({
      badBeforeCommit: asSystem()
        .output(schema)
        .mutation(async ({ write }) => {
          const made = await write(
            async (tx) => {
              await tx.insert(instanceSecrets).values({ name: refused, value: 'x' });
              return { made: 1 } as never;
            },
            { later: { sent: true } },
          );
          return { ...made, sent: true };
        }),
      badAfterCommit: asSystem()
        .output(schema)
        .mutation(async ({ write }) => {
          const made = await write(
            async (tx) => {
              await tx.insert(instanceSecrets).values({ name: kept, value: 'x' });
              return { made: 'yes' };
            },
            { later: { sent: true } },
          );
          return { ...made, sent: 'maybe' } as never;
        }),
    });
    await expect(call.badBeforeCommit!()).rejects.toThrow();
    expect(await secretNamed(refused)).toHaveLength(0);
    // What is added after COMMIT cannot undo it; it is still refused.
    await expect(call.badAfterCommit!()).rejects.toThrow('Output validation failed');
    expect(await secretNamed(kept)).toHaveLength(1);
  });

  it('write needs the procedure’s .output()', async () => {
    const { call } = callerOf({
      bare: asSystem().mutation(({ write }) => (write as (w: () => Promise<unknown>) => unknown)(async () => 1)),
    });
    await expect(call.bare!()).rejects.toThrow('no .output()');
  });
});
