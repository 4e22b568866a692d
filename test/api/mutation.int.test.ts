/**
 * runMutation's output check (server/api/mutation.ts): a body is checked against its operation's
 * output schema once, inside the transaction, and tRPC's own check after the procedure passes it
 * through; a body that fails the check leaves nothing behind.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { instanceSecrets } from '@/db/schema';
import { createApiContext } from '@/server/api/context';
import { checkedInTransaction, runMutation } from '@/server/api/mutation';
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
  const schema = z.object({ data: z.object({ n: z.number() }) }).refine(() => ++state.checks > 0);
  return { schema, state };
}

function callerOf(procedures: Parameters<typeof router>[0]) {
  const ctx = createApiContext(app.runtime, {
    transport: 'rest',
    method: 'POST',
    url: new URL('http://127.0.0.1:3000/api/v1/test'),
    headers: nodeHeaders({}),
  });
  return createCallerFactory(router(procedures))(ctx) as unknown as Record<string, () => Promise<unknown>>;
}

const actor = (): Actor => ({
  type: 'system',
  id: 'system:test',
  ownerId: app.ws.ownerUserId,
  workspaceId: app.ws.workspaceId,
  trace: systemTrace(randomUUID()),
});

describe('runMutation', () => {
  it('checks the output once: in the transaction, not again after the procedure', async () => {
    const once = counted();
    const twice = counted();
    const caller = callerOf({
      once: publicProcedure
        .output(checkedInTransaction(once.schema))
        .mutation(({ ctx }) => runMutation(ctx, actor(), { status: 201, output: once.schema }, async () => ({ data: { n: 1 } }))),
      // The same without checkedInTransaction: tRPC checks the body a second time.
      twice: publicProcedure
        .output(twice.schema)
        .mutation(({ ctx }) => runMutation(ctx, actor(), { status: 201, output: twice.schema }, async () => ({ data: { n: 1 } }))),
    });
    expect(await caller.once!()).toEqual({ data: { n: 1 } });
    expect(once.state.checks).toBe(1);
    expect(await caller.twice!()).toEqual({ data: { n: 1 } });
    expect(twice.state.checks).toBe(2);
  });

  it('a body its schema refuses rolls the writes back', async () => {
    const { schema } = counted();
    const caller = callerOf({
      bad: publicProcedure.output(checkedInTransaction(schema)).mutation(({ ctx }) =>
        runMutation(ctx, actor(), { status: 201, output: schema }, async (tx) => {
          await tx.insert(instanceSecrets).values({ name: 'test-rollback', value: 'x' });
          return { data: { n: 'not a number' } } as never;
        }),
      ),
    });
    await expect(caller.bad!()).rejects.toThrow();
    expect(await app.runtime.db.select().from(instanceSecrets).where(eq(instanceSecrets.name, 'test-rollback'))).toHaveLength(0);
  });
});
