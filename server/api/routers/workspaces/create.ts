/** The web interface's "New workspace": the signed-in user creates one and becomes its owner. */
import { z } from 'zod';
import { createWorkspace } from '@/server/domain/workspaces/create-workspace';
import { humanProcedure } from '../../trpc';
import { text } from '../../schemas';

export const createProcedure = humanProcedure
  .input(z.strictObject({ name: text(1, 100) }))
  .output(z.object({ id: z.uuid(), name: z.string() }))
  .mutation(async ({ ctx, input }) => {
    const { principal, runtime } = ctx;
    const created = await runtime.db.transaction((tx) =>
      createWorkspace(tx, ctx.trace, {
        name: input.name,
        owner: { email: principal.email, displayName: principal.displayName },
        byHuman: true,
      }),
    );
    return { id: created.workspaceId, name: created.name };
  });
