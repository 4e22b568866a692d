/**
 * The calls the MCP gateway made to (or refused for) the tools of the upstream servers a workspace
 * fronts, as the ledger's tool_call.* events recorded them: read here by server, decision or run.
 */
import { router } from '../../trpc';
import { listProcedure } from './list';

export const toolCallsRouter = router({
  list: listProcedure,
});
