/** DELETE /mcp-servers/{id}: Remove an upstream MCP server. */
import { z } from 'zod';
import { removeServer } from '@/server/domain/mcp-servers/servers';
import { answered, auth, common, serverAnswer, serverPath, serverProcedure } from './shared';

export const removeProcedure = serverProcedure
  .meta({
    openapi: {
      ...common,
      method: 'DELETE',
      path: '/mcp-servers/{id}',
      summary: 'Remove an upstream MCP server',
      description:
        'Its tools leave /mcp, and its sealed headers are deleted with it. The calls made to it stay on record. Recorded as ' +
        'mcp_server.removed.',
    },
    auth,
    errorCodes: ['not_found', 'forbidden'],
  })
  .input(serverPath)
  .output(serverAnswer(z.object({ id: z.uuid(), name: z.string(), removed: z.literal(true) }), 'McpServerRemoved'))
  .mutation(({ input, actor, write }) => write(async (tx) => answered(actor.workspaceId, await removeServer(tx, actor, input.id))));
