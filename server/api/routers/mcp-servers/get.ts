/** GET /mcp-servers/{id}: Read an upstream MCP server, with its version as the ETag. */
import { getServer } from '@/server/domain/mcp-servers/servers';
import { etag } from '../../versioning';
import { answered, auth, common, serverPath, serverProcedure, serverResponse } from './shared';

export const getProcedure = serverProcedure
  .meta({
    openapi: {
      ...common,
      method: 'GET',
      path: '/mcp-servers/{id}',
      summary: 'Read an upstream MCP server',
      description:
        'The server with its tools as last listed and what a call of each does now (`mode`, and the guard that says so), with ' +
        'an ETag of its version for a conditional PATCH. The header values are never shown.',
    },
    auth,
    errorCodes: ['not_found', 'forbidden'],
    successHeaders: { ETag: 'The server’s aggregateVersion, quoted: send it back as If-Match on PATCH.' },
  })
  .input(serverPath)
  .output(serverResponse)
  .query(async ({ ctx, input, actor }) => {
    const server = await getServer(ctx.runtime.db, actor.workspaceId, input.id);
    ctx.res.headers.ETag = etag(server.aggregateVersion);
    return answered(actor.workspaceId, server);
  });
