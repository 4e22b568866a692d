/**
 * Upstream MCP servers: POST/GET /mcp-servers, GET/PATCH/DELETE /mcp-servers/{id} and refresh. For
 * the workspace's owners and its API keys. The gateway that calls them is server/gateway; one file
 * per procedure here, the schemas they share in shared.ts.
 */
import { router } from '../../trpc';
import { registerProcedure } from './register';
import { listProcedure } from './list';
import { getProcedure } from './get';
import { updateProcedure } from './update';
import { removeProcedure } from './remove';
import { refreshProcedure } from './refresh';

export const mcpServersRouter = router({
  register: registerProcedure,
  list: listProcedure,
  get: getProcedure,
  update: updateProcedure,
  remove: removeProcedure,
  refresh: refreshProcedure,
});
