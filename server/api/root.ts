/**
 * The application router: every procedure. Those with OpenAPI meta are also the REST operations
 * under /api/v1 (server/api/operations.ts reads them); the rest serve the web interface only, at
 * /api/trpc (account, API keys, members, the inbox across workspaces, the ledger browser).
 */
import { router } from './trpc';
import { accountRouter } from './routers/account';
import { apiKeysRouter } from './routers/api-keys';
import { artifactTypesRouter } from './routers/artifact-types';
import { artifactsRouter } from './routers/artifacts';
import { toolCallsRouter } from './routers/tool-calls';
import { decisionPolicyRouter } from './routers/decision-policy';
import { decisionsRouter } from './routers/decisions';
import { dedupRouter } from './routers/dedup';
import { eventsRouter } from './routers/events';
import { grantsRouter } from './routers/grants';
import { initiativesRouter } from './routers/initiatives';
import { ledgerRouter } from './routers/ledger';
import { mcpServersRouter } from './routers/mcp-servers';
import { lifecycleRouter } from './routers/lifecycle';
import { membersRouter } from './routers/members';
import { metaRouter } from './routers/meta';
import { receiptsRouter } from './routers/receipts';
import { runsRouter } from './routers/runs';
import { tasksRouter } from './routers/tasks';
import { workRouter } from './routers/work';
import { webhooksRouter } from './routers/webhooks';
import { workspacesRouter } from './routers/workspaces';

export const appRouter = router({
  work: workRouter,
  tasks: tasksRouter,
  decisions: decisionsRouter,
  grants: grantsRouter,
  apiKeys: apiKeysRouter,
  initiatives: initiativesRouter,
  runs: runsRouter,
  lifecycle: lifecycleRouter,
  dedup: dedupRouter,
  receipts: receiptsRouter,
  artifactTypes: artifactTypesRouter,
  artifacts: artifactsRouter,
  decisionPolicy: decisionPolicyRouter,
  events: eventsRouter,
  ledger: ledgerRouter,
  meta: metaRouter,
  workspaces: workspacesRouter,
  members: membersRouter,
  account: accountRouter,
  webhooks: webhooksRouter,
  toolCalls: toolCallsRouter,
  mcpServers: mcpServersRouter,
});

export type AppRouter = typeof appRouter;
