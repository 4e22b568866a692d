/** The application router: every procedure, each published as REST under /api/v1. */
import { router } from './trpc';
import { apiKeysRouter } from './routers/api-keys';
import { artifactTypesRouter } from './routers/artifact-types';
import { decisionsRouter } from './routers/decisions';
import { eventsRouter } from './routers/events';
import { initiativesRouter } from './routers/initiatives';
import { ledgerRouter } from './routers/ledger';
import { metaRouter } from './routers/meta';
import { workRouter } from './routers/work';

export const appRouter = router({
  work: workRouter,
  decisions: decisionsRouter,
  apiKeys: apiKeysRouter,
  initiatives: initiativesRouter,
  artifactTypes: artifactTypesRouter,
  events: eventsRouter,
  ledger: ledgerRouter,
  meta: metaRouter,
});

export type AppRouter = typeof appRouter;
