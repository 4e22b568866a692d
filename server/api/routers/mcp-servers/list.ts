/** GET /mcp-servers: List the upstream MCP servers. */
import { z } from 'zod';
import { listServers } from '@/server/domain/mcp-servers/servers';
import { openList, pageMeta, pageOf, pageParams } from '../../keyset';
import { ownerProcedure } from '../../procedures';
import { auth, common, serverSchema } from './shared';

export const listProcedure = ownerProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/mcp-servers',
      summary: 'List the upstream MCP servers',
      description: 'Newest first, paged by cursor; each with its tools and what a call of each does now. Never a header’s value.',
    },
    auth,
    errorCodes: ['forbidden', 'invalid_cursor'],
  })
  .input(z.strictObject({ ...pageParams }))
  .output(z.object({ data: z.array(serverSchema), meta: pageMeta }).meta({ id: 'McpServerList' }))
  .query(async ({ ctx, input, actor }) => {
    const { workspaceId } = actor;
    const { scope, after } = openList(ctx, workspaceId, 'mcp-servers', input);
    const { db, secrets } = ctx.runtime;
    const rows = await listServers(db, workspaceId, { after, limit: input.limit + 1 });
    const { page, meta } = pageOf(rows, (r) => r.key, { secret: secrets.cursor, scope, limit: input.limit, workspaceId });
    return { data: page.map(({ key: _key, ...view }) => view), meta };
  });
